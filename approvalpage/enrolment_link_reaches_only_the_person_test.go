package approvalpage

import (
	"context"
	"errors"
	"html"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var launcherTargetRE = regexp.MustCompile(`url=([^"]+)"`)

// The enrolment link is the only thing between any local process and
// registering its own passkey: Enroll hands the browser a launcher file
// (private to the user) instead of the link, so the link is on no command
// line and in no environment, and the launcher is deleted when the
// enrolment ends.
func TestEnrolmentLinkGoesThroughALauncherRemovedAtTheEnd(t *testing.T) {
	seen := spyBrowser(t)
	runtimeDir(t)
	file := filepath.Join(t.TempDir(), "page-passkeys.json")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Enroll(ctx, EnrollOptions{File: file, Name: "ada"})
		done <- err
	}()
	spied := waitFile(t, seen)
	var launcher string
	for _, l := range strings.Split(spied, "\n") {
		if strings.HasPrefix(l, "file://") {
			u, err := url.Parse(l)
			if err != nil {
				t.Fatal(err)
			}
			launcher = u.Path
		}
	}
	if launcher == "" {
		t.Fatalf("the browser was not given a launcher file:\n%s", spied)
	}
	fi, err := os.Stat(launcher)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the launcher file: %v %v", fi, err)
	}
	b, err := os.ReadFile(launcher)
	if err != nil {
		t.Fatal(err)
	}
	m := launcherTargetRE.FindSubmatch(b)
	if m == nil {
		t.Fatalf("the launcher leads nowhere:\n%s", b)
	}
	link := html.UnescapeString(string(m[1]))
	secret := link[strings.LastIndex(link, "/")+1:]
	if !strings.HasPrefix(link, "http://localhost:") || len(secret) < 40 || strings.Contains(spied, secret) {
		t.Fatalf("the link %s, or its secret in what other users can read:\n%s", link, spied)
	}
	u, _ := url.Parse(link)
	e := &enrolling{link: link, origin: "http://" + u.Host}
	if code, body := e.register(t, newAuthenticator(t)); code != 200 {
		t.Fatalf("registering through the launcher's link: %d %s", code, body)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(launcher)); !os.IsNotExist(err) {
		t.Fatalf("the launcher's directory outlived the enrolment: %v", err)
	}
}

// When no browser opens, the link goes to the operator's own log (the
// terminal of the person who ran the command), and the enrolment waits
// for it there.
func TestEnrolmentWithoutABrowserLogsItsLink(t *testing.T) {
	var log lockedBuffer
	links := make(chan string, 1)
	file := filepath.Join(t.TempDir(), "page-passkeys.json")
	done := make(chan error, 1)
	go func() {
		_, err := Enroll(context.Background(), EnrollOptions{File: file, Name: "ada", Logger: slog.New(slog.NewTextHandler(&log, nil)),
			Open: func(link string) error { links <- link; return errors.New("no display") }})
		done <- err
	}()
	link := <-links
	u, _ := url.Parse(link)
	e := &enrolling{link: link, origin: "http://" + u.Host}
	if code, body := e.register(t, newAuthenticator(t)); code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	wantLog := "could not open the browser; open the link yourself"
	if s := log.String(); !strings.Contains(s, wantLog) || !strings.Contains(s, "link="+link) || !strings.Contains(s, "no display") {
		t.Fatalf("the log:\n%s", s)
	}
}
