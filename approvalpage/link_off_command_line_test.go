package approvalpage

import (
	"bytes"
	"context"
	"errors"
	"html"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/approver"
)

// spyBrowser sets $BROWSER to a script that records what any local user
// can read of it: its argv (and /proc/PID/cmdline) and its environment.
// It returns the file that collects them, written once the script ran.
func spyBrowser(t *testing.T) (seen string) {
	t.Helper()
	dir := t.TempDir()
	seen = filepath.Join(dir, "seen")
	script := filepath.Join(dir, "browser")
	body := "#!/bin/sh\n{ for a in \"$0\" \"$@\"; do printf '%s\\n' \"$a\"; done; tr '\\0' '\\n' < /proc/$$/cmdline; tr '\\0' '\\n' < /proc/$$/environ; env; } > " + seen + ".tmp\nmv " + seen + ".tmp " + seen + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BROWSER", script)
	return seen
}

// runtimeDir points $XDG_RUNTIME_DIR at a directory anyone may enter, so
// that only the launcher's own directory and file keep others out.
func runtimeDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", d)
	return d
}

func waitFile(t *testing.T, p string) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if b, err := os.ReadFile(p); err == nil {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was never written", p)
		}
		time.Sleep(10 * time.Millisecond) // polling a process's output, not timing
	}
}

// lockedBuffer is a log the opener's goroutine and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// defaultPage is a page that opens links the way servers do (Options.Open
// nil: the launcher file), logging into a buffer.
func defaultPage(t *testing.T) (*Page, *lockedBuffer) {
	t.Helper()
	var log lockedBuffer
	p, err := Listen(Options{Addr: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, &log
}

var refreshRE = regexp.MustCompile(`http-equiv="refresh" content="0;url=([^"]+)"`)

// linkInLauncher reads the launcher file as the person's browser does
// (the same user) and returns the link it sends the browser to.
func linkInLauncher(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := refreshRE.FindSubmatch(b)
	if m == nil {
		t.Fatalf("the launcher file has no redirect:\n%s", b)
	}
	return html.UnescapeString(string(m[1]))
}

// launcherPath is the file:// address among what the opener was given.
func launcherPath(t *testing.T, seen string) string {
	t.Helper()
	for _, w := range strings.Fields(seen) {
		if strings.HasPrefix(w, "file://") {
			return strings.TrimPrefix(w, "file://")
		}
	}
	t.Fatalf("the opener was given no file:// address:\n%s", seen)
	return ""
}

// Attack: a process that reads the opener's command line (/proc/PID/cmdline,
// world-readable) and environment, and everything they name, cannot load
// the page nor approve; another user cannot read the launcher file they
// name. Control: the person's browser, running as them, follows the
// launcher to the page, and Approve there approves the call.
func TestPageLinkNeverOnTheOpenersCommandLine(t *testing.T) {
	seenFile := spyBrowser(t)
	runtimeDir(t)
	p, _ := defaultPage(t)
	r := request("argv", time.Now().Add(5*time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := make(chan outcome, 1)
	go func() { d, err := p.Approve(ctx, r); out <- outcome{d, err} }()
	seen := waitFile(t, seenFile)

	// The attacker tries every word it saw: as an address, and as the
	// secret part of the page's path.
	words := strings.FieldsFunc(seen, func(c rune) bool { return c == '\n' || c == ' ' || c == '=' || c == '\x00' })
	for _, w := range words {
		for _, u := range []string{w, p.URL() + "/a/" + w, p.URL() + "/a/" + filepath.Base(w)} {
			if !strings.HasPrefix(u, "http://") {
				continue
			}
			res, err := http.Get(u)
			if err != nil {
				continue
			}
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				t.Fatalf("what the opener's command line or environment showed loads the page: %s", u)
			}
		}
	}
	// The file it names: private to the person.
	path := launcherPath(t, seen)
	dirInfo, err := os.Stat(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	fileInfo, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if dirInfo.Mode().Perm() != 0o700 || fileInfo.Mode().Perm() != 0o600 {
		t.Fatalf("the launcher is readable by others: directory %v, file %v", dirInfo.Mode(), fileInfo.Mode())
	}
	if os.Geteuid() == 0 {
		if setpriv, err := exec.LookPath("setpriv"); err == nil {
			b, err := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "cat", path).CombinedOutput()
			if err == nil || strings.Contains(string(b), "/a/") {
				t.Fatalf("another user read the launcher file: %s", b)
			}
		}
	}
	pendingStill(t, out)

	// Control: the person's browser reads the file and lands on the page.
	link := linkInLauncher(t, path)
	if strings.Contains(seen, link) || strings.Contains(seen, strings.TrimPrefix(link, p.URL()+"/a/")) {
		t.Fatalf("the link's secret reached the opener:\n%s", seen)
	}
	form, _ := page(t, link)
	if code, body := post(t, link, p.URL(), form, "approve"); code != http.StatusOK {
		t.Fatalf("control: %d %s", code, body)
	}
	if o := <-out; o.err != nil || !o.dec.Approved {
		t.Fatalf("control: %+v %v", o.dec, o.err)
	}
	if _, err := os.Stat(filepath.Dir(path)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the launcher outlived the decision: %v", err)
	}
}

// A browser that does not open ($BROWSER fails, or no opener at all) is
// said on stderr (the log), with the launcher file to open, never the
// link; and the pending answer says the request was not shown, until the
// page is loaded. Control: an opener that succeeds.
func TestBrowserThatFailsToOpenIsReported(t *testing.T) {
	bin := t.TempDir()
	cases := []struct {
		name, browser, path string
		notShown            bool
	}{
		{"BROWSER=/bin/false", "/bin/false", os.Getenv("PATH"), true},
		{"no opener at all", "", bin, true},
		{"control: an opener that works", "/bin/true", os.Getenv("PATH"), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("BROWSER", c.browser)
			t.Setenv("PATH", c.path)
			runtimeDir(t)
			p, log := defaultPage(t)
			r := request("fails", time.Now().Add(5*time.Minute))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// Poll with Await's own wait until the opener's fate is known.
			var err error
			for range 100 {
				_, err = p.Await(ctx, r, 100*time.Millisecond)
				if !errors.Is(err, approver.ErrPending) || errors.Is(err, approver.ErrNotShown) || !c.notShown {
					break
				}
			}
			if !errors.Is(err, approver.ErrPending) || errors.Is(err, approver.ErrNotShown) != c.notShown {
				t.Fatalf("pending answer: %v (want not-shown %v)", err, c.notShown)
			}
			if !c.notShown {
				if strings.Contains(log.String(), "could not open") {
					t.Fatalf("a working opener was reported as failed: %s", log)
				}
				return
			}
			m := regexp.MustCompile(`open="?file://([^"\s]+)`).FindStringSubmatch(log.String())
			if !strings.Contains(log.String(), "could not open the browser") || m == nil {
				t.Fatalf("stderr does not say how to reach the page: %s", log)
			}
			link := linkInLauncher(t, m[1])
			if strings.Contains(log.String(), strings.TrimPrefix(link, p.URL()+"/a/")) {
				t.Fatalf("the log carries the link's secret: %s", log)
			}
			// The person opens the file the log names: the request is shown.
			page(t, link)
			if _, err := p.Await(ctx, r, 10*time.Millisecond); !errors.Is(err, approver.ErrPending) || errors.Is(err, approver.ErrNotShown) {
				t.Fatalf("after the page was loaded: %v", err)
			}
		})
	}
}

// The page says when an approved call runs, as it stands at the click:
// now, when the call is still waiting; when the assistant calls again,
// when the call already answered "pending" (and the next Await gets the
// approval).
func TestApprovedPageSaysWhenTheCallRuns(t *testing.T) {
	h := newHarness(t)

	waiting := request("waiting", h.clk.Now().Add(5*time.Minute))
	out := h.await(t, waiting)
	link := h.openedLink(t)
	form, _ := page(t, link)
	code, body := post(t, link, h.URL(), form, "approve")
	if code != http.StatusOK || !strings.Contains(body, "runs now") || strings.Contains(body, "calls again") {
		t.Fatalf("approved while the call waits: %d %s", code, body)
	}
	if o := <-out; !o.dec.Approved {
		t.Fatalf("%+v %v", o.dec, o.err)
	}

	answered := request("answered", h.clk.Now().Add(5*time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := h.Await(ctx, answered, 10*time.Millisecond); !errors.Is(err, approver.ErrPending) {
		t.Fatalf("want pending: %v", err)
	}
	link = h.openedLink(t)
	form, _ = page(t, link)
	code, body = post(t, link, h.URL(), form, "approve")
	if code != http.StatusOK || strings.Contains(body, "runs now") || !strings.Contains(body, "when the assistant calls again") || !strings.Contains(body, "nothing has run yet") {
		t.Fatalf("approved after the call answered pending: %d %s", code, body)
	}
	_, again := page(t, link)
	if !strings.Contains(again, "when the assistant calls again") {
		t.Fatalf("opened again: %s", again)
	}
	if d, err := h.Await(ctx, answered, 10*time.Millisecond); err != nil || !d.Approved {
		t.Fatalf("the retry does not pick the approval up: %+v %v", d, err)
	}
}
