package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/journal"
)

// startApprovals runs `mcpsafe approvals serve` with extra flags until the
// test ends and returns its base URL.
func startApprovals(t *testing.T, sf, af string, extra ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	orig := approvalsContext
	approvalsContext = func() (context.Context, context.CancelFunc) { return ctx, cancel }
	pr, pw := io.Pipe()
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		args := []string{"approvals", "serve", "--listen", "127.0.0.1:0", "--secret-file", sf}
		if af != "" {
			args = append(args, "--approvers-file", af)
		}
		args = append(args, extra...) // a later --listen wins
		code := run(args, pw, &errb)
		pw.Close()
		done <- code
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		approvalsContext = orig
	})
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no banner: %v (stderr %s)", err, errb.String())
	}
	go io.Copy(io.Discard, pr)
	base := regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(line)
	if base == "" {
		t.Fatalf("banner %q", line)
	}
	return base
}

// keygen makes the service's key; serve signs with it; the gate's webhook
// checks with the printed public key; `journal verify --service-key`
// re-checks the journaled statement, and refuses it under another key.
func TestApprovalsSignedDecisions(t *testing.T) {
	sf, af := approvalsFiles(t)
	keyFile := filepath.Join(t.TempDir(), "signing.key")
	var out, errb bytes.Buffer
	if code := run([]string{"approvals", "keygen", "--signing-key-file", keyFile}, &out, &errb); code != 0 {
		t.Fatalf("keygen: exit %d: %s", code, errb.String())
	}
	pubText := strings.TrimSpace(out.String())
	pub, err := channel.ParsePublicKey(pubText)
	if err != nil {
		t.Fatal(err)
	}
	if code := run([]string{"approvals", "keygen", "--signing-key-file", keyFile}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "exists") {
		t.Fatalf("keygen over an existing key: exit %d, %s", code, errb.String())
	}
	base := startApprovals(t, sf, af, "--signing-key-file", keyFile)
	secret, _ := channel.LoadSecretFile(sf)
	hook, err := channel.NewWebhook(base+"/webhook", secret, channel.WithServiceKey(pub))
	if err != nil {
		t.Fatal(err)
	}
	req := approver.Request{ID: "cmd-sig", Tool: "drop_table", Summary: "drop table users", Principal: "ci",
		Audience: "db", ArgsDigest: strings.Repeat("ab", 32), ExpiresAt: time.Now().Add(time.Minute)}
	type result struct {
		d   approver.Decision
		err error
	}
	res := make(chan result, 1)
	go func() {
		d, err := hook.Approve(context.Background(), req)
		res <- result{d, err}
	}()
	waitFor(t, "the approval finds the request", func() bool {
		r, _ := http.NewRequest("POST", base+"/api/requests/cmd-sig/approve", nil)
		r.Header.Set("Authorization", "Bearer alice-token-0123456789")
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode != 404 // 404: not registered yet
	})
	r := <-res
	if r.err != nil || !r.d.Approved || len(r.d.Evidence) == 0 {
		t.Fatalf("decision %+v, %v", r.d, r.err)
	}

	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := journal.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Append(context.Background(), journal.Record{Call: req.ID, Tool: req.Tool, Principal: req.Principal,
		ArgsDigest: req.ArgsDigest, Decision: journal.ChannelApproved, By: "alice", Assurance: "channel", Evidence: r.d.Evidence}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	out.Reset()
	errb.Reset()
	if code := run([]string{"journal", "verify", path, "--service-key", pubText}, &out, &errb); code != 0 || !strings.Contains(out.String(), "1 channel approvals carry a valid signature") {
		t.Fatalf("control: journal verify: exit %d, %s %s", code, out.String(), errb.String())
	}
	other, _, _ := ed25519.GenerateKey(nil)
	errb.Reset()
	if code := run([]string{"journal", "verify", path, "--service-key", channel.EncodePublicKey(other)}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "does not match") {
		t.Fatalf("another key: exit %d, %s", code, errb.String())
	}
}
