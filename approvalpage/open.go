package approvalpage

import (
	"errors"
	"fmt"
	"html"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// The page's link is its only secret (without passkeys), so it never goes
// on a command line or into a child's environment: every local user can
// read /proc/PID/cmdline. The server writes a launcher instead, a small
// HTML file that sends the browser on to the link, with mode 0600 in a
// fresh directory of mode 0700, and hands only that file's path to the
// opener. Another user cannot read it; the person's browser, running as
// them, can.

// openerGrace is how long an opener may take to fail: one that has not
// exited by then is taken to have opened the browser (a browser started by
// $BROWSER may run for hours).
const openerGrace = 10 * time.Second

// A Launcher is the file that opens one link in a browser.
type Launcher struct {
	// Path is the launcher file's path; only this reaches the opener.
	Path string
	dir  string
	once sync.Once
}

// NewLauncher writes a launcher for link under $XDG_RUNTIME_DIR (a
// directory of the user's own, by its specification) or else the
// temporary directory: a directory of its own, mode 0700, holding one
// file, mode 0600, that redirects to link.
func NewLauncher(link string) (*Launcher, error) {
	base := os.Getenv("XDG_RUNTIME_DIR")
	if base == "" || !filepath.IsAbs(base) {
		base = os.TempDir()
	}
	dir, err := os.MkdirTemp(base, "mcpsafe-page-") // mode 0700
	if err != nil {
		return nil, fmt.Errorf("approval page: a private directory for the launcher file: %w", err)
	}
	l := &Launcher{Path: filepath.Join(dir, "approve.html"), dir: dir}
	f, err := os.OpenFile(l.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("approval page: the launcher file: %w", err)
	}
	h := html.EscapeString(link)
	_, err = fmt.Fprintf(f, `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">`+
		`<meta http-equiv="refresh" content="0;url=%s"><title>mcpsafe: opening the approval page</title></head>`+
		`<body><p>Opening the approval page… <a href="%s">open it</a> if nothing happens.</p></body></html>`+"\n", h, h)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("approval page: the launcher file: %w", err)
	}
	return l, nil
}

// URL is the launcher's file:// address (it names the file, not the link).
func (l *Launcher) URL() string {
	p := filepath.ToSlash(l.Path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // C:/… on Windows
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}

// Remove deletes the launcher file and its directory.
func (l *Launcher) Remove() {
	l.once.Do(func() { os.RemoveAll(l.dir) })
}

// Open runs the opener on the launcher: the command in $BROWSER when set
// (its first ':'-separated entry, split into words; "%s" in a word is
// replaced by the launcher's file:// address, else the address is added as
// the last word; never through a shell), else the platform's opener
// (xdg-open; open on macOS; the URL handler of url.dll on Windows). The
// opener gets the launcher's address and the server's own environment, never
// the link. It returns an error when the opener cannot start or exits with
// a failure within openerGrace.
func (l *Launcher) Open() error {
	argv, err := openerArgv(l)
	if err != nil {
		return err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("approval page: the browser opener %q did not start: %w", argv[0], err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // reap it whenever it ends
	t := time.NewTimer(openerGrace)
	defer t.Stop()
	select {
	case err := <-exited:
		if err != nil {
			return fmt.Errorf("approval page: the browser opener %q failed: %w", argv[0], err)
		}
		return nil
	case <-t.C:
		return nil // still running: a browser
	}
}

func openerArgv(l *Launcher) ([]string, error) {
	b := strings.TrimSpace(os.Getenv("BROWSER"))
	if b == "" {
		return platformOpener(l), nil
	}
	// $BROWSER may list several commands separated by ':'; the first.
	first, _, _ := strings.Cut(b, ":")
	argv := strings.Fields(first)
	if len(argv) == 0 {
		return nil, errors.New("approval page: $BROWSER names no command")
	}
	target := l.URL()
	replaced := false
	for i, a := range argv {
		if strings.Contains(a, "%s") {
			argv[i], replaced = strings.ReplaceAll(a, "%s", target), true
		}
	}
	if !replaced {
		argv = append(argv, target)
	}
	return argv, nil
}

// OpenBrowser opens link in the user's browser through a launcher file
// (NewLauncher, Launcher.Open) and returns the launcher, for the caller to
// Remove once the browser no longer needs it (the link is dead, or was
// decided). On an error the launcher, when written, is returned too: its
// Path is how the person can reach the link without a browser opened for
// them.
func OpenBrowser(link string) (*Launcher, error) {
	l, err := NewLauncher(link)
	if err != nil {
		return nil, err
	}
	return l, l.Open()
}
