package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/channel"
)

const (
	cmdSlackToken  = "xoxb-cmd-secret-token-4242"
	cmdSlackSecret = "cmd-signing-secret-4242abcd"
)

// slackFiles writes the two Slack secret files (mode 0600) and gives
// alice a Slack id in the approvers file.
func slackFiles(t *testing.T, af string) (token, secret string) {
	dir := t.TempDir()
	token, secret = filepath.Join(dir, "slack-token"), filepath.Join(dir, "slack-secret")
	os.WriteFile(token, []byte(cmdSlackToken+"\n"), 0o600)
	os.WriteFile(secret, []byte(cmdSlackSecret+"\n"), 0o600)
	data, _ := os.ReadFile(af)
	os.WriteFile(af, []byte(strings.Replace(string(data), "\n", " slack=U0ALICE\n", 1)), 0o600)
	return token, secret
}

// TestApprovalsSlackFlags: the Slack flags go together, with --origin, and
// the secrets come from private files only.
func TestApprovalsSlackFlags(t *testing.T) {
	sf, af := approvalsFiles(t)
	tok, sec := slackFiles(t, af)
	loose := filepath.Join(t.TempDir(), "loose")
	os.WriteFile(loose, []byte(cmdSlackToken+"\n"), 0o644)
	base := []string{"serve", "--secret-file", sf, "--approvers-file", af}
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"channel alone", []string{"--slack-channel", "C0APPROVE"}, 2, "Slack approvals need"},
		{"no origin", []string{"--slack-bot-token-file", tok, "--slack-signing-secret-file", sec, "--slack-channel", "C0APPROVE"}, 2, "--origin"},
		{"no signing secret", []string{"--slack-bot-token-file", tok, "--slack-channel", "C0APPROVE", "--origin", "https://a.example"}, 2, "--slack-signing-secret-file"},
		{"readable token", []string{"--slack-bot-token-file", loose, "--slack-signing-secret-file", sec, "--slack-channel", "C0APPROVE", "--origin", "https://a.example"}, 1, "must not be readable"},
		{"readable secret", []string{"--slack-bot-token-file", tok, "--slack-signing-secret-file", loose, "--slack-channel", "C0APPROVE", "--origin", "https://a.example"}, 1, "must not be readable"},
		{"channel name", []string{"--slack-bot-token-file", tok, "--slack-signing-secret-file", sec, "--slack-channel", "#approvals", "--origin", "https://a.example"}, 1, "channel's id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(append(append([]string{"approvals"}, base...), tc.args...), &out, &errb)
			if code != tc.code || !strings.Contains(errb.String(), tc.msg) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, errb.String(), tc.code, tc.msg)
			}
			if strings.Contains(errb.String(), cmdSlackToken) || strings.Contains(errb.String(), cmdSlackSecret) {
				t.Fatalf("a Slack secret in the output: %s", errb.String())
			}
		})
	}
}

// TestApprovalsServeSlack: serve with the Slack flags posts a request to
// (a stand-in of) Slack with the token from its file, retries when Slack
// fails, and never writes either secret to its logs.
func TestApprovalsServeSlack(t *testing.T) {
	sf, af := approvalsFiles(t)
	tok, sec := slackFiles(t, af)
	var mu sync.Mutex
	var tokens []string
	posts := 0
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		mu.Lock()
		defer mu.Unlock()
		tokens = append(tokens, r.PostForm.Get("token"))
		if r.URL.Path != "/api/chat.postMessage" {
			json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": "unknown_method"})
			return
		}
		posts++
		if posts == 1 {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": "C0APPROVE", "ts": "1765130000.000001"})
	}))
	defer api.Close()

	ctx, cancel := context.WithCancel(context.Background())
	orig := approvalsContext
	approvalsContext = func() (context.Context, context.CancelFunc) { return ctx, cancel }
	defer func() { approvalsContext = orig }()
	pr, pw := io.Pipe()
	var errb syncBuffer
	done := make(chan int, 1)
	go func() {
		code := run([]string{"approvals", "serve", "--listen", "127.0.0.1:0", "--secret-file", sf, "--approvers-file", af,
			"--origin", "https://approvals.example.com", "--slack-bot-token-file", tok, "--slack-signing-secret-file", sec,
			"--slack-channel", "C0APPROVE", "--slack-api-url", api.URL + "/api/"}, pw, &errb)
		pw.Close()
		done <- code
	}()
	rd := bufio.NewReader(pr)
	line, err := rd.ReadString('\n')
	if err != nil {
		t.Fatalf("no banner: %v (stderr %s)", err, errb.String())
	}
	slackLine, _ := rd.ReadString('\n')
	go io.Copy(io.Discard, pr)
	if !strings.Contains(slackLine, "https://approvals.example.com/slack/interactions") {
		t.Fatalf("the banner does not name the interactivity URL: %q", slackLine)
	}
	base := regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(line)
	secret, _ := channel.LoadSecretFile(sf)
	hook, _ := channel.NewWebhook(base+"/webhook", secret)
	go hook.Approve(context.Background(), approver.Request{ID: "cmd-slack", Tool: "drop_table", Summary: "drop table users",
		Principal: "ci", Audience: "db", ExpiresAt: time.Now().Add(time.Minute)})
	var n int
	waitFor(t, "2 posts to Slack", func() bool {
		mu.Lock()
		n = posts
		mu.Unlock()
		return n >= 2
	}, func() string { return fmt.Sprintf("posts: %d; stderr %s", n, errb.String()) })
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	for _, got := range tokens {
		if got != cmdSlackToken {
			t.Fatalf("the API got token %q", got)
		}
	}
	logs := errb.String()
	if !strings.Contains(logs, "Slack answered HTTP 500") {
		t.Fatalf("the failed post was not logged: %s", logs)
	}
	if strings.Contains(logs, cmdSlackToken) || strings.Contains(logs, cmdSlackSecret) {
		t.Fatalf("a Slack secret in the logs: %s", logs)
	}
}

// syncBuffer is a bytes.Buffer the server's logger and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
