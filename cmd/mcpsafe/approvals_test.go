package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/approvals"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/channel"
)

func approvalsFiles(t *testing.T) (secretFile, approversFile string) {
	dir := t.TempDir()
	secretFile = filepath.Join(dir, "secret")
	approversFile = filepath.Join(dir, "approvers")
	secret := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, pw := range map[string]string{"alice": "alice-token-0123456789", "bob": "bob-token-0123456789ab"} {
		if err := approvals.SetPassword(approversFile, name, pw); err != nil {
			t.Fatal(err)
		}
	}
	return secretFile, approversFile
}

func TestApprovalsFlags(t *testing.T) {
	sf, af := approvalsFiles(t)
	loose := filepath.Join(t.TempDir(), "loose")
	os.WriteFile(loose, []byte(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))+"\n"), 0o644)
	cases := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no subcommand", nil, 2, "usage: mcpsafe approvals serve"},
		{"unknown subcommand", []string{"start"}, 2, "usage"},
		{"unknown flag", []string{"serve", "--secret-file", sf, "--approvers-file", af, "--bogus"}, 2, "flag provided but not defined: -bogus"},
		{"stray argument", []string{"serve", "--secret-file", sf, "--approvers-file", af, "extra"}, 2, "unexpected argument"},
		{"no secret file", []string{"serve", "--approvers-file", af}, 2, "are required"},
		{"no approvers file", []string{"serve", "--secret-file", sf}, 2, "are required"},
		{"bad require", []string{"serve", "--secret-file", sf, "--approvers-file", af, "--require", "drop_table=0"}, 2, "N must be"},
		{"require more than configured", []string{"serve", "--secret-file", sf, "--approvers-file", af, "--require", "drop_table=3"}, 1, "only 2 are configured"},
		{"tls half", []string{"serve", "--secret-file", sf, "--approvers-file", af, "--tls-cert", "c.pem"}, 2, "go together"},
		{"public plain http", []string{"serve", "--secret-file", sf, "--approvers-file", af, "--listen", "0.0.0.0:0"}, 1, "not a loopback address"},
		{"readable secret", []string{"serve", "--secret-file", loose, "--approvers-file", af}, 1, "must not be readable"},
		{"bad store", []string{"serve", "--secret-file", sf, "--approvers-file", af, "--store", "redis://x"}, 1, "unknown store"},
		{"passkeys without origin", []string{"serve", "--secret-file", sf, "--approvers-file", af, "--passkeys-file", "pk.json"}, 2, "--passkeys-file needs --origin"},
		{"require-passkey without passkeys", []string{"serve", "--secret-file", sf, "--approvers-file", af, "--require-passkey", "drop_table"}, 2, "--require-passkey needs --passkeys-file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(append([]string{"approvals"}, tc.args...), &out, &errb)
			if code != tc.code || !strings.Contains(errb.String(), tc.msg) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, errb.String(), tc.code, tc.msg)
			}
		})
	}
}

// The command serves the real service: a webhook call waits until an
// approver decides over the JSON API; a cancelled context shuts it down.
func TestApprovalsServe(t *testing.T) {
	sf, af := approvalsFiles(t)
	ctx, cancel := context.WithCancel(context.Background())
	orig := approvalsContext
	approvalsContext = func() (context.Context, context.CancelFunc) { return ctx, cancel }
	defer func() { approvalsContext = orig }()

	pr, pw := io.Pipe()
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		code := run([]string{"approvals", "serve", "--listen", "127.0.0.1:0", "--secret-file", sf, "--approvers-file", af,
			"--store", "file:" + filepath.Join(t.TempDir(), "a.db"), "--require", "drop_table=2", "--host", "approvals.test"}, pw, &errb)
		pw.Close()
		done <- code
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no banner: %v (stderr %s)", err, errb.String())
	}
	go io.Copy(io.Discard, pr)
	base := regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(line)
	if base == "" {
		t.Fatalf("banner %q", line)
	}

	secret, err := channel.LoadSecretFile(sf)
	if err != nil {
		t.Fatal(err)
	}
	hook, err := channel.NewWebhook(base+"/webhook", secret)
	if err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 1)
	go func() {
		d, err := hook.Approve(context.Background(), approver.Request{
			ID: "cmd-1", Tool: "drop_table", Summary: "drop table users", Principal: "ci", Audience: "db", ExpiresAt: time.Now().Add(time.Minute)})
		if err == nil && (!d.Approved || len(d.Approvers) != 2) {
			t.Errorf("decision %+v", d)
		}
		res <- err
	}()
	post := func(who, token string) int {
		var code int
		waitFor(t, who+"'s approval finds the request", func() bool {
			req, _ := http.NewRequest("POST", base+"/api/requests/cmd-1/approve", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			code = resp.StatusCode
			return code != 404 // 404: not registered yet
		})
		return code
	}
	if c := post("alice", "alice-token-0123456789"); c != 200 {
		t.Fatalf("alice: HTTP %d", c)
	}
	if c := post("bob", "bob-token-0123456789ab"); c != 200 {
		t.Fatalf("bob: HTTP %d", c)
	}
	if err := <-res; err != nil {
		t.Fatalf("webhook: %v", err)
	}
	// DNS rebinding: only the listen address, loopback names and --host.
	for host, want := range map[string]int{"evil.example": 421, "approvals.test": 200, "127.0.0.1": 200} {
		req, _ := http.NewRequest("GET", base+"/login", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: HTTP %d, want %d", host, resp.StatusCode, want)
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
}
