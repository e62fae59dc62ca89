package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serviceWithLog runs `mcpsafe approvals serve` on listen with its stderr
// (the service's log) captured; stop ends it.
func serviceWithLog(t *testing.T, listen, secretFile, approversFile string) (base string, log *lockedBuffer, stop func()) {
	t.Helper()
	cmd := exec.Command(binary, "approvals", "serve", "--listen", listen, "--secret-file", secretFile, "--approvers-file", approversFile)
	log = &lockedBuffer{}
	cmd.Stderr = log
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	var once sync.Once
	stop = func() { once.Do(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }) }
	t.Cleanup(stop)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("approvals serve did not start: %v; stderr: %s", err, log.String())
	}
	base = regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(line)
	if base == "" {
		t.Fatalf("banner %q", line)
	}
	return base, log, stop
}

func otherSecret(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "other.secret")
	must(t, os.WriteFile(p, []byte(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32))+"\n"), 0o600))
	return p
}

// A gate whose channel can never work says so at start-up, before any call
// needs it, in words that name the flag to change; the service logs what it
// refused and why. The right configuration starts clean (control).
func TestChannelMisconfigurationFailsAtStart(t *testing.T) {
	sf, af := approvalsFiles(t)
	base, svcLog, _ := serviceWithLog(t, "127.0.0.1:0", sf, af)
	root := t.TempDir()
	gate := func(url, secret string) []string {
		return []string{"files", "--root", root, "--journal", filepath.Join(t.TempDir(), "j.jsonl"), "--mode", "channel",
			"--approver-url", url, "--approver-secret-file", secret}
	}
	for _, tc := range []struct {
		name, url, secret string
		gateSays          []string
		serviceSays       []string
	}{
		{"wrong secret", base + "/webhook", otherSecret(t),
			[]string{"refused the signature", "--approver-secret-file must hold the same secret as the service's --secret-file", "HTTP 401"},
			[]string{"refused a probe", "status=401", "signature does not match", "--secret-file"}},
		{"URL without /webhook", base, sf,
			[]string{"HTTP 404", "/webhook", "--approver-url"},
			[]string{"refused a signed call", "status=404", "must end in /webhook"}},
		{"URL with another path", base + "/hook", sf,
			[]string{"HTTP 404", "/webhook", "--approver-url"},
			[]string{`no webhook at \"/hook\"`}},
	} {
		before := len(svcLog.String())
		code, stderr := runExit(t, os.Environ(), gate(tc.url, tc.secret)...)
		if code == 0 {
			t.Errorf("%s: the gate started; stderr: %s", tc.name, stderr)
		}
		for _, w := range tc.gateSays {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: the gate's error lacks %q:\n%s", tc.name, w, stderr)
			}
		}
		if strings.Contains(stderr, "stays open") || strings.Contains(stderr, "withdraw") {
			t.Errorf("%s: the gate speaks of a withdrawal of a request that never opened:\n%s", tc.name, stderr)
		}
		for _, w := range tc.serviceSays {
			waitFor(t, fmt.Sprintf("%s: the service's log says %q", tc.name, w), func() bool { return strings.Contains(svcLog.String()[before:], w) },
				func() string { return "log:\n" + svcLog.String()[before:] })
		}
	}
	// Control: the right configuration starts clean and the probe left no
	// request behind (stdin at EOF: it starts, then ends with exit 0).
	code, stderr := runExit(t, os.Environ(), gate(base+"/webhook", sf)...)
	if code != 0 || strings.TrimSpace(stderr) != "" {
		t.Fatalf("the right configuration: exit %d, stderr:\n%s", code, stderr)
	}
	if !strings.Contains(svcLog.String(), "a gate checked the channel") {
		t.Fatalf("the service did not log the probe:\n%s", svcLog.String())
	}
	if n := len(apiRequests(t, base)); n != 0 {
		t.Fatalf("the probes left %d requests at the service", n)
	}
	// A service that is down at start-up is a warning, not an error: it may
	// start after the gate.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	down := "http://" + l.Addr().String() + "/webhook"
	l.Close()
	code, stderr = runExit(t, os.Environ(), gate(down, sf)...)
	if code != 0 || !strings.Contains(stderr, "cannot be reached now") {
		t.Fatalf("service down at start: exit %d, stderr:\n%s", code, stderr)
	}
}

// apiRequests lists the service's requests as alice.
func apiRequests(t *testing.T, base string) []map[string]any {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/api/requests", nil)
	req.Header.Set("Authorization", "Bearer "+approverTokens["alice"])
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	var list struct{ Requests []map[string]any }
	if resp.StatusCode != 200 {
		t.Fatalf("GET /api/requests: HTTP %d", resp.StatusCode)
	}
	must(t, json.NewDecoder(resp.Body).Decode(&list))
	return list.Requests
}

// A channel that breaks after the start (the service now has another
// secret): the call is refused, the gate's log says what is wrong and what
// to change, with no false "stays open" warning (the request never
// opened), and the service logs what it refused. Control: the same call
// with the service's own secret reaches it.
func TestChannelSecretMismatchAtCallTime(t *testing.T) {
	sf, af := approvalsFiles(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	listen := l.Addr().String()
	l.Close()
	_, _, stop := serviceWithLog(t, listen, sf, af)

	w := newWorkspace(t)
	cmd := exec.Command(binary, "files", "--root", w.root, "--journal", w.journal, "--mode", "channel",
		"--approver-url", "http://"+listen+"/webhook", "--approver-secret-file", sf)
	gateLog := &lockedBuffer{}
	cmd.Stderr = gateLog
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v; stderr: %s", err, gateLog.String())
	}
	t.Cleanup(func() { cs.Close() })

	// The service is replaced by one with another secret.
	stop()
	base, svcLog, stopOther := serviceWithLog(t, listen, otherSecret(t), af)
	res := call(t, cs, "delete_file", map[string]any{"path": "cache.txt"})
	if r := reasonOf(t, res); r != "channel_unavailable" || content(t, w.path("cache.txt")) != "cache" {
		t.Fatalf("reason %q (want channel_unavailable), file %q", r, content(t, w.path("cache.txt")))
	}
	glog := gateLog.String()
	for _, want := range []string{"refused the signature of the request", "--approver-secret-file must hold the same secret"} {
		if !strings.Contains(glog, want) {
			t.Errorf("the gate's log lacks %q:\n%s", want, glog)
		}
	}
	if strings.Contains(glog, "stays open") {
		t.Errorf("the gate warns that a request that never opened stays open:\n%s", glog)
	}
	if s := svcLog.String(); !strings.Contains(s, "refused a webhook request") || !strings.Contains(s, "status=401") {
		t.Errorf("the service did not log the refusal:\n%s", s)
	}
	if n := len(apiRequests(t, base)); n != 0 {
		t.Fatalf("a refused request is pending at the service (%d)", n)
	}

	// Control: with the gate's secret again the request reaches the
	// service, and an approver's "no" comes back as such.
	stopOther()
	base, _, _ = serviceWithLog(t, listen, sf, af)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan string, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": "cache.txt"}})
		if err != nil {
			done <- err.Error()
			return
		}
		done <- reasonOf(t, res)
	}()
	var id string
	waitFor(t, "with the right secret the request reaches the service", func() bool {
		if l := apiRequests(t, base); len(l) == 1 {
			id, _ = l[0]["id"].(string)
		}
		return id != ""
	})
	req, _ := http.NewRequest("POST", base+"/api/requests/"+id+"/deny", nil)
	req.Header.Set("Authorization", "Bearer "+approverTokens["alice"])
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	resp.Body.Close()
	if r := <-done; r != "channel_denied" || content(t, w.path("cache.txt")) != "cache" {
		t.Fatalf("after the denial: %q", r)
	}
}
