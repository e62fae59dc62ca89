package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/ledger/ledgertest"
)

// approvalsDB creates a database for the test and drops it afterwards.
func approvalsDB(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, ledgertest.PostgresURL())
	if err != nil {
		ledgertest.Missing(t, "PostgreSQL at "+ledgertest.PostgresURL(), err)
	}
	name := "approvals_cmd_" + ledgertest.RandHex(6)
	if _, err := admin.Exec(ctx, `CREATE DATABASE `+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		admin.Exec(context.Background(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
		admin.Close(context.Background())
	})
	u, _ := url.Parse(ledgertest.PostgresURL())
	u.Path = "/" + name
	return u.String()
}

// Two `approvals serve --store postgres://` replicas: a request a gate
// waits for on A, approved on B, reaches the gate at once; told to stop,
// A drains (its waiting gate is answered pending and re-attaches to B),
// and B's probes say alive and ready.
func TestApprovalsServeReplicasDrain(t *testing.T) {
	sf, af := approvalsFiles(t)
	store := approvalsDB(t)
	ctxs := make(chan context.Context, 2)
	orig := approvalsContext
	approvalsContext = func() (context.Context, context.CancelFunc) { return <-ctxs, func() {} }
	defer func() { approvalsContext = orig }()

	type replica struct {
		base   string
		stop   context.CancelFunc
		done   chan int
		stderr *bytes.Buffer
		exited bool
	}
	start := func() *replica {
		ctx, cancel := context.WithCancel(context.Background())
		ctxs <- ctx
		pr, pw := io.Pipe()
		r := &replica{stop: cancel, done: make(chan int, 1), stderr: &bytes.Buffer{}}
		go func() {
			code := run([]string{"approvals", "serve", "--listen", "127.0.0.1:0", "--secret-file", sf, "--approvers-file", af,
				"--store", store}, pw, r.stderr)
			pw.Close()
			r.done <- code
		}()
		line, err := bufio.NewReader(pr).ReadString('\n')
		if err != nil {
			t.Fatalf("no banner: %v", err)
		}
		go io.Copy(io.Discard, pr)
		if strings.Contains(line, "postgres://") && !strings.Contains(line, "approvals_cmd_") {
			t.Fatalf("banner %q", line)
		}
		r.base = regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(line)
		t.Cleanup(func() {
			cancel()
			if !r.exited {
				<-r.done
			}
		})
		return r
	}
	a := start()
	b := start()
	secret, err := channel.LoadSecretFile(sf)
	if err != nil {
		t.Fatal(err)
	}
	hookA, _ := channel.NewWebhook(a.base+"/webhook", secret)
	hookB, _ := channel.NewWebhook(b.base+"/webhook", secret)
	req := approver.Request{ID: "cmd-rep", Tool: "drop_table", Summary: "drop table users", Principal: "ci", Audience: "db",
		ExpiresAt: time.Now().Add(time.Minute)}
	first := make(chan error, 1)
	go func() { _, err := hookA.Approve(context.Background(), req); first <- err }()
	waitFor(t, "the request shows on replica B", func() bool {
		r, _ := http.NewRequest("GET", b.base+"/api/requests/cmd-rep", nil)
		r.Header.Set("Authorization", "Bearer alice-token-0123456789")
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	a.stop() // SIGTERM
	select {
	case err := <-first:
		if !errors.Is(err, channel.ErrPending) {
			t.Fatalf("the gate waiting on the stopping replica: %v, want pending (re-attach elsewhere)", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stopping replica kept its gate waiting")
	}
	code := <-a.done
	a.exited = true
	if code != 0 || !strings.Contains(a.stderr.String(), "draining") {
		t.Fatalf("replica A: exit %d: %s", code, a.stderr.String())
	}
	again := make(chan approver.Decision, 1)
	go func() { d, _ := hookB.Approve(context.Background(), req); again <- d }()
	var approveCode int
	waitFor(t, "approve on B answered 200", func() bool {
		r, _ := http.NewRequest("POST", b.base+"/api/requests/cmd-rep/approve", nil)
		r.Header.Set("Authorization", "Bearer alice-token-0123456789")
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		approveCode = resp.StatusCode
		return approveCode == 200
	}, func() string { return fmt.Sprintf("HTTP %d", approveCode) })
	select {
	case d := <-again:
		if !d.Approved {
			t.Fatalf("the re-attached gate: %+v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the re-attached gate got no answer")
	}
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200} {
		r, _ := http.NewRequest("GET", b.base+path, nil)
		r.Host = "pod-10-0-0-7.internal:8080" // a probe names the pod, not a served host
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s on B: HTTP %d", path, resp.StatusCode)
		}
	}
}
