package approvals

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// askMany puts n more requests pending (webhook callers that wait) and
// returns the ids of all pending ones in the page's order, oldest first,
// as the API lists them.
func (e *env) askMany(prefix string, n int) []string {
	e.t.Helper()
	_, before := e.api("GET", "/api/requests", "alice")
	want := len(before["requests"].([]any)) + n
	for i := range n {
		r := testRequest(fmt.Sprintf("%s-%03d", prefix, i))
		r.ExpiresAt = time.Now().Add(5 * time.Minute)
		e.ask(r)
	}
	var ids []string
	waitFor(e.t, fmt.Sprintf("%d requests pending", want), func() bool {
		_, out := e.api("GET", "/api/requests", "alice")
		list := out["requests"].([]any)
		if len(list) < want {
			return false
		}
		ids = make([]string, len(list))
		for i, it := range list {
			ids[i] = it.(map[string]any)["id"].(string)
		}
		return true
	})
	return ids
}

var cardID = regexp.MustCompile(`id="req-([^"]+)"`)

// getPage loads a page as alice and returns the ids of its cards.
func (e *env) getPage(t *testing.T, query string) (ids []string, body string) {
	t.Helper()
	code, b := e.login("alice").get(query)
	if code != 200 {
		t.Fatalf("GET %s: HTTP %d", query, code)
	}
	for _, m := range cardID.FindAllStringSubmatch(b, -1) {
		ids = append(ids, m[1])
	}
	return ids, b
}

// The page and its live fragment show PageSize requests at a time, oldest
// first: page 2 is the next PageSize, a page past the end is the last one,
// and the count is of all that wait.
func TestPendingPages(t *testing.T) {
	e := newEnv(t, ServiceOptions{MaxPending: 500})
	all := e.askMany("p", 2*PageSize+7)
	for _, tc := range []struct {
		query string
		want  []string
		nav   string
	}{
		{"/", all[:PageSize], "Page <span id=\"page-no\">1</span> of 3"},
		{"/?page=2", all[PageSize : 2*PageSize], "Page <span id=\"page-no\">2</span> of 3"},
		{"/?page=3", all[2*PageSize:], "Page <span id=\"page-no\">3</span> of 3"},
		{"/?page=99", all[2*PageSize:], "Page <span id=\"page-no\">3</span> of 3"},
		{"/?page=x", all[:PageSize], "Page <span id=\"page-no\">1</span> of 3"},
		{"/ui/fragment?page=2", all[PageSize : 2*PageSize], "Page <span id=\"page-no\">2</span> of 3"},
	} {
		got, body := e.getPage(t, tc.query)
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s shows %d cards %v…, want %d from %s", tc.query, len(got), first(got), len(tc.want), tc.want[0])
		}
		if !strings.Contains(body, tc.nav) || !strings.Contains(body, `id="pending-count">107<`) {
			t.Errorf("%s: no %q or count 107", tc.query, tc.nav)
		}
	}
	// Control: with one page there is no page navigation.
	small := newEnv(t, ServiceOptions{})
	small.askMany("q", 3)
	if got, body := small.getPage(t, "/"); len(got) != 3 || strings.Contains(body, `id="pages"`) {
		t.Errorf("3 pending: %d cards, navigation shown: %v", len(got), strings.Contains(body, `id="pages"`))
	}
}

func first(ids []string) []string { return ids[:min(len(ids), 2)] }

// TestBrowserPendingPages drives the paginated list in real chromium: page
// 1 of 3, on to page 3 by the link, a request that arrives shows up there
// without a reload, and one decided elsewhere loses its buttons in place
// (the count drops); the list is never reloaded.
func TestBrowserPendingPages(t *testing.T) {
	ctx := newChromium(t)
	e := newEnv(t, ServiceOptions{MaxPending: 500})
	all := e.askMany("p", 2*PageSize+7)
	browserLogin(t, ctx, e.srv.URL, "alice")
	cards := func() int {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('article.req:not(.stale)').length`))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := cards(); n != PageSize {
		t.Fatalf("page 1 shows %d cards, want %d", n, PageSize)
	}
	// The link is found and clicked in one step in the page: the page
	// redraws its navigation when the live stream connects and after each
	// move, so a node found first and clicked after (chromedp.Click) can be
	// gone in between ("Could not find node with given id").
	next := chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		found, err := chromedp.Evaluate[bool](`(() => { const a = document.querySelector('#page-next'); if (!a) return false; a.click(); return true })()`)(ctx, tg)
		if err == nil && !found {
			err = errors.New("no #page-next link on the page")
		}
		return err
	})
	if err := chromedp.Do(ctx,
		chromedp.WaitVisible(chromedp.CSS(`#req-`+all[0])),
		next,
		chromedp.WaitVisible(chromedp.CSS(`#req-`+all[PageSize])),
		next,
		chromedp.WaitVisible(chromedp.CSS(`#req-`+all[2*PageSize])),
		chromedp.WaitVisible(chromedp.CSS(`.live:not(.off)`)),
	); err != nil {
		t.Fatalf("navigating to page 3: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.notReloaded = true`)); err != nil {
		t.Fatal(err)
	}
	if n := cards(); n != 7 {
		t.Fatalf("page 3 shows %d cards, want 7", n)
	}
	nav, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#pages`)))
	if err != nil || !strings.Contains(nav, "Page 3 of 3") || strings.Contains(nav, "newer") {
		t.Fatalf("navigation on the last page: %q %v", nav, err)
	}

	// A new request arrives: it is the newest, so it joins page 3.
	if now := e.askMany("z-new", 1); now[len(now)-1] != "z-new-000" {
		t.Fatalf("the new request is not the newest: %v", now[len(now)-3:])
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#req-z-new-000 button.approve`))); err != nil {
		t.Fatalf("the new request did not show up on page 3: %v", err)
	}
	// One on this page is denied elsewhere: it loses its buttons in place.
	gone := all[2*PageSize+1]
	e.decide(gone, "deny", "bob", 200)
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#req-`+gone+`.stale`))); err != nil {
		t.Fatalf("the request denied elsewhere was not marked: %v", err)
	}
	count, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#pending-count`)))
	if err != nil || count != "107" { // 107 + 1 new - 1 denied
		t.Fatalf("count %q, want 107 (%v)", count, err)
	}
	if n := cards(); n != 7 {
		t.Fatalf("page 3 shows %d live cards, want 7 (6 + the new one)", n)
	}
	same, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.notReloaded === true`))
	if err != nil || !same {
		t.Fatal("the page was reloaded for a live update")
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	artifact(t, "approvals-pending-pages.png", png)
}

var (
	cardRev = regexp.MustCompile(`id="req-([^"]+)" data-id="[^"]+" data-rev="([^"]+)"`)
	histRev = regexp.MustCompile(`<section class="history" data-rev="([^"]+)"`)
)

// A live update carries only what changed: the cards the tab has as they
// are come as stubs, the history only when it changed; a card that
// changed, or entered the window, comes whole. Control: a fragment asked
// without what the tab has is the whole window.
func TestLiveUpdateSendsOnlyWhatChanged(t *testing.T) {
	e := newEnv(t, ServiceOptions{MaxPending: 500})
	all := e.askMany("p", 2*PageSize+7)
	b := e.login("alice")
	full := func() (string, []string, string) {
		_, body := b.get("/ui/fragment?page=1")
		var have []string
		for _, m := range cardRev.FindAllStringSubmatch(body, -1) {
			have = append(have, m[1]+"."+m[2])
		}
		h := histRev.FindStringSubmatch(body)
		if len(have) != PageSize || h == nil {
			t.Fatalf("full fragment: %d cards with a rev, history rev %v", len(have), h)
		}
		return body, have, h[1]
	}
	whole, have, h := full()
	update := func() string {
		_, body := b.get("/ui/fragment?page=1&have=" + url.QueryEscape(strings.Join(have, " ")) + "&h=" + h)
		return body
	}
	stubs := func(body string) int { return strings.Count(body, `data-same="1"></article>`) }

	// Nothing changed: 50 stubs, no card, the history not sent.
	body := update()
	if stubs(body) != PageSize || strings.Contains(body, `class="approve"`) || !strings.Contains(body, `<section class="history" data-rev="`+h+`" data-same="1">`) {
		t.Fatalf("an update with nothing changed sends %d stubs, cards %v, history %v", stubs(body), strings.Contains(body, `class="approve"`), !strings.Contains(body, `data-same="1">`+"\n  <h2>"))
	}
	if len(body)*10 > len(whole) {
		t.Errorf("an unchanged update is %d bytes; the window is %d", len(body), len(whole))
	}
	// A new request lands on page 3: page 1 is as it was, the count moves.
	e.askMany("z-new", 1)
	if body = update(); stubs(body) != PageSize || !strings.Contains(body, `id="pending-count">108<`) {
		t.Fatalf("after a request on another page: %d stubs, count 108: %v", stubs(body), strings.Contains(body, `id="pending-count">108<`))
	}
	// One on page 1 is denied: it leaves the window, the first of page 2
	// enters whole, the history comes along; the other 49 stay stubs.
	e.decide(all[3], "deny", "bob", 200)
	body = update()
	if stubs(body) != PageSize-1 || !strings.Contains(body, `id="req-`+all[PageSize]+`" data-id="`+all[PageSize]+`" data-rev=`) ||
		strings.Contains(body, `id="req-`+all[3]+`"`) || !strings.Contains(body, `id="hist-`+all[3]+`"`) {
		t.Fatalf("after a denial on page 1: %d stubs (want %d), the next card whole, the denied one out, in the history", stubs(body), PageSize-1)
	}
	// Alice approves one (bob's approval makes it run): the card changes.
	code, _ := b.post("/ui/requests/"+all[5]+"/approve", url.Values{"csrf": {b.csrf}}, e.srv.URL)
	if code != 200 && code != 303 {
		t.Fatalf("approve: HTTP %d", code)
	}
	if body = update(); strings.Contains(body, `id="req-`+all[5]+`"`) || !strings.Contains(body, `id="hist-`+all[5]+`"`) || stubs(body) != PageSize-2 {
		t.Fatalf("after an approval on page 1: the card still in the window, or not in the history, or %d stubs", stubs(body))
	}
}
