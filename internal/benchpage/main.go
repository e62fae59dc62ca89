// Command benchpage drives the approval-page row of
// scripts/bench-instructions: the approval service (package channel) in this
// process with -pending requests, sent through the real signed webhook, and
// -loads loads of its page by a logged-in approver (after one warm-up
// load). It prints the page's bytes and the bytes allocated and allocations
// per load, and the bytes of a live update (the tab's window in full, and
// an update when nothing changed); valgrind's count of -loads N minus -loads 0 is the instructions
// per load. (Its own binary, so that the approval service's packages do not
// weigh on the counts of internal/benchdrive.)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approvals"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/channel"
)

func main() {
	if err := approvalPage(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "benchpage:", err)
		os.Exit(1)
	}
}

func approvalPage(args []string) error {
	fl := flag.NewFlagSet("approval-page", flag.ExitOnError)
	pending := fl.Int("pending", 10_000, "pending requests")
	loads := fl.Int("loads", 5, "page loads measured")
	fl.Parse(args)
	secret := []byte(strings.Repeat("s", 32))
	const name, token = "alice", "alice-token-0123456789"
	svc, err := approvals.NewService(approvals.ServiceOptions{Secret: secret, Approvers: []approvals.Approver{{Name: name, Token: token}},
		MaxPending: *pending + 10})
	if err != nil {
		return err
	}
	defer svc.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: svc}
	go srv.Serve(l)
	defer srv.Close()
	base := "http://" + l.Addr().String()
	hook, err := channel.NewWebhook(base+"/webhook", secret)
	if err != nil {
		return err
	}
	// Each request is sent with "Prefer: wait=1": the service answers 202
	// after a second and keeps it pending.
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	for range 500 {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(*pending) {
					return
				}
				_, err := hook.Await(ctx, approver.Request{
					ID: fmt.Sprintf("req-%d", i), Tool: "delete_file", Summary: fmt.Sprintf(`delete "file-%d.txt" (12 KiB)`, i),
					Details:    []string{fmt.Sprintf("path: /srv/data/file-%d.txt", i)},
					Targets:    []mcpsafe.Target{{Name: fmt.Sprintf("/srv/data/file-%d.txt", i), State: "sha256:ab12, 12288 bytes"}},
					ArgsDigest: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
					Principal:  "ci-bot", Audience: "files@host", Irreversible: true,
					ExpiresAt: time.Now().Add(50 * time.Minute),
				}, time.Second)
				if !errors.Is(err, channel.ErrPending) {
					select {
					case errs <- fmt.Errorf("request %d: %v", i, err):
					default:
					}
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	form := url.Values{"name": {name}, "password": {token}}
	req, _ := http.NewRequest(http.MethodPost, base+"/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Value != "" {
			cookie = c
		}
	}
	if cookie == nil {
		return fmt.Errorf("login: %s, no session cookie", resp.Status)
	}
	load := func() (int, error) {
		req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
		req.AddCookie(cookie)
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("page: %s", resp.Status)
		}
		return len(b), err
	}
	if _, err := load(); err != nil { // warm-up
		return err
	}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	t0 := time.Now()
	size := 0
	for range *loads {
		n, err := load()
		if err != nil {
			return err
		}
		size = n
	}
	wall := time.Since(t0)
	runtime.ReadMemStats(&m1)
	if *loads == 0 {
		return nil // the fixed cost only, for an instruction count
	}
	// A live update with nothing changed: the tab names the cards and the
	// history it has (their revs), as app.js does, and gets stubs back.
	full, err := get(hc, cookie, base+"/ui/fragment?page=1")
	if err != nil {
		return err
	}
	var have []string
	for _, m := range cardRev.FindAllStringSubmatch(full, -1) {
		have = append(have, m[1]+"."+m[2])
	}
	h := histRev.FindStringSubmatch(full)
	if len(have) == 0 || h == nil {
		return fmt.Errorf("the fragment has no card or history revs")
	}
	update, err := get(hc, cookie, base+"/ui/fragment?page=1&have="+url.QueryEscape(strings.Join(have, " "))+"&h="+h[1])
	if err != nil {
		return err
	}
	fmt.Printf("pending=%d page_bytes=%d alloc_bytes_per_load=%d allocs_per_load=%d wall_ms_per_load=%.0f window_bytes=%d unchanged_update_bytes=%d\n", *pending, size,
		(m1.TotalAlloc-m0.TotalAlloc)/uint64(*loads), (m1.Mallocs-m0.Mallocs)/uint64(*loads), float64(wall.Milliseconds())/float64(*loads),
		len(full), len(update))
	return nil
}

var (
	cardRev = regexp.MustCompile(`id="req-([^"]+)" data-id="[^"]+" data-rev="([^"]+)"`)
	histRev = regexp.MustCompile(`<section class="history" data-rev="([^"]+)"`)
)

func get(hc *http.Client, cookie *http.Cookie, u string) (string, error) {
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.AddCookie(cookie)
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %s", u, resp.Status)
	}
	return string(b), err
}
