package approvals

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/journal"
)

// gateJournal is a journal a gate is writing: opened with the journal's
// own writer (held open, as a running gate holds it) and stamped at the
// times the test chooses.
type gateJournal struct {
	t    *testing.T
	j    *journal.Journal
	path string
	mu   sync.Mutex
	at   time.Time
	n    int // records added
}

func openGateJournal(t *testing.T) *gateJournal {
	t.Helper()
	g := &gateJournal{t: t, path: filepath.Join(t.TempDir(), "gate.jsonl"), at: time.Now()}
	j, err := journal.Open(g.path, journal.WithClock(func() time.Time { g.mu.Lock(); defer g.mu.Unlock(); return g.at }))
	if err != nil {
		t.Fatal(err)
	}
	g.j = j
	t.Cleanup(func() { j.Close() })
	return g
}

// add appends n records like r stamped at.
func (g *gateJournal) add(at time.Time, n int, r journal.Record) {
	g.t.Helper()
	g.mu.Lock()
	g.at = at
	g.mu.Unlock()
	for i := 0; i < n; i++ {
		g.n++
		r.Call = fmt.Sprintf("call-%d", g.n)
		if err := g.j.Append(context.Background(), r); err != nil {
			g.t.Fatal(err)
		}
	}
}

// scriptJournal writes what a gate records over a day: outcomes, refusals
// with their reason codes, standing grant uses, approvals (not charted)
// and one outcome from before the window.
func scriptJournal(g *gateJournal, now time.Time) {
	rec := func(decision, reason string) journal.Record {
		return journal.Record{Tool: "delete_file", Principal: "user:ci", Decision: decision, Reason: reason, Summary: "delete cache.txt"}
	}
	g.add(now.Add(-30*time.Hour), 1, rec(journal.Executed, ""))
	g.add(now.Add(-5*time.Hour), 3, rec(journal.ClientAccepted, ""))
	g.add(now.Add(-5*time.Hour), 3, rec(journal.Executed, ""))
	g.add(now.Add(-5*time.Hour), 2, rec(journal.Refused, mcpsafe.ReasonPolicyDenied))
	g.add(now.Add(-5*time.Hour), 1, rec(journal.Declined, mcpsafe.ReasonDeclined))
	g.add(now.Add(-2*time.Hour), 2, rec(journal.GrantUsed, ""))
	g.add(now.Add(-2*time.Hour), 2, rec(journal.Executed, ""))
	g.add(now.Add(-2*time.Hour), 1, rec(journal.Failed, ""))
}

// The numbers scriptJournal and scriptDecisions make.
var (
	wantJournal   = map[string]int{kindExecuted: 5, kindFailed: 1, kindRefused: 3, kindAmbiguous: 0, kindGrantUsed: 2}
	wantReasons   = map[string]int{mcpsafe.ReasonPolicyDenied: 2, mcpsafe.ReasonDeclined: 1}
	wantDecisions = map[string]int{channel.StatusApproved: 2, channel.StatusDenied: 1, channel.StatusExpired: 1, channel.StatusWithdrawn: 1}
)

// scriptDecisions drives the service through webhook calls and approvers'
// votes: two approved, one denied, one withdrawn by its gate, one expired
// and one still pending.
func scriptDecisions(t *testing.T, e *env) {
	t.Helper()
	var chans []chan result
	for _, id := range []string{"ov-a1", "ov-a2", "ov-d", "ov-w", "ov-pending"} {
		chans = append(chans, e.ask(testRequest(id)))
		e.waitPending(id)
	}
	e.decide("ov-a1", "approve", "bob", 200)
	e.decide("ov-a2", "approve", "carol", 200)
	e.decide("ov-d", "deny", "carol", 200)
	if err := e.hook.Withdraw(context.Background(), testRequest("ov-w"), approver.WithdrawCallerGone); err != nil {
		t.Fatal(err)
	}
	for _, ch := range chans[:4] {
		wait(t, ch)
	}
	short := testRequest("ov-expired")
	short.ExpiresAt = time.Now().Add(1500 * time.Millisecond)
	if r := wait(t, e.ask(short)); r.d.Approved {
		t.Fatal("an expired request was approved")
	}
}

// overviewAPI fetches /api/overview as alice.
func overviewAPI(t *testing.T, e *env) map[string]any {
	t.Helper()
	code, out := e.api("GET", "/api/overview", "alice")
	if code != 200 {
		t.Fatalf("/api/overview: HTTP %d %v", code, out)
	}
	return out
}

func num(v any) int {
	f, _ := v.(float64)
	return int(f)
}

var (
	tableLinkRE = regexp.MustCompile(`<a href="([^"]+)" data-key="[^"]+"(?: data-reason="[^"]*")?>(\d+)</a>`)
	svgLinkRE   = regexp.MustCompile(`<a href="([^"]+)" class="seg"`)
	countRE     = regexp.MustCompile(`<span id="record-count">(\d+)</span>`)
)

// A real journal (held open by its writer) and a real service store: the
// overview's numbers are the ones scripted, in the page and in the API,
// and every number links to a list of exactly that many records.
func TestOverviewNumbersLinkToTheirRecords(t *testing.T) {
	g := openGateJournal(t)
	now := time.Now()
	scriptJournal(g, now)
	e := newEnv(t, ServiceOptions{Store: "file:" + filepath.Join(t.TempDir(), "approvals.db"), Journals: []string{g.path}})
	scriptDecisions(t, e)

	out := overviewAPI(t, e)
	pending := out["pending"].(map[string]any)
	if num(pending["count"]) != 1 || pending["oldest_wait_seconds"].(float64) <= 0 {
		t.Errorf("pending %v, want 1 waiting", pending)
	}
	for k, v := range wantDecisions {
		if got := num(out["decisions"].(map[string]any)["totals"].(map[string]any)[k]); got != v {
			t.Errorf("decisions %s = %d, want %d", k, got, v)
		}
	}
	ttd := out["time_to_decision"].(map[string]any)
	if num(ttd["decisions"]) != 3 || ttd["median_seconds"].(float64) > ttd["p90_seconds"].(float64) {
		t.Errorf("time to decision %v: want 3 decisions, median <= p90", ttd)
	}
	jr := out["journal"].(map[string]any)
	for k, v := range wantJournal {
		if got := num(jr["totals"].(map[string]any)[k]); got != v {
			t.Errorf("journal %s = %d, want %d", k, got, v)
		}
	}
	for k, v := range wantReasons {
		if got := num(jr["refusals_by_reason"].(map[string]any)[k]); got != v {
			t.Errorf("refusals %s = %d, want %d", k, got, v)
		}
	}
	src := jr["sources"].([]any)[0].(map[string]any)
	if src["state"] != srcIntact || num(src["records"]) != 15 {
		t.Errorf("source %v, want intact with 15 records", src)
	}
	hourly := 0
	for _, h := range jr["hours"].([]any) {
		hourly += num(h.(map[string]any)[kindExecuted])
	}
	if hourly != wantJournal[kindExecuted] {
		t.Errorf("hourly executed add up to %d, want %d", hourly, wantJournal[kindExecuted])
	}

	b := e.login("alice")
	code, page := b.get("/overview")
	if code != 200 {
		t.Fatalf("/overview: HTTP %d", code)
	}
	if !strings.Contains(page, `<span class="big" id="pending-now">1</span>`) {
		t.Error("the page does not show 1 waiting")
	}
	links := tableLinkRE.FindAllStringSubmatch(page, -1)
	hrefs := map[string]bool{}
	for _, m := range links {
		href, want := html.UnescapeString(m[1]), m[2]
		hrefs[href] = true
		code, list := b.get(href)
		c := countRE.FindStringSubmatch(list)
		if code != 200 || c == nil || c[1] != want {
			t.Errorf("%s: HTTP %d, lists %v records, the overview says %s", href, code, c, want)
		}
		if n, _ := strconv.Atoi(want); strings.Count(list, `<tr class="rec`) != n {
			t.Errorf("%s: %d rows, want %s", href, strings.Count(list, `<tr class="rec`), want)
		}
	}
	// 4 decision statuses, 2 hours x 4 journal kinds with counts, totals,
	// grant uses, reasons: at least one link per scripted number.
	if len(links) < len(wantDecisions)+len(wantJournal)-1+len(wantReasons) {
		t.Errorf("only %d numbers link to their records", len(links))
	}
	for _, m := range svgLinkRE.FindAllStringSubmatch(page, -1) {
		if !hrefs[html.UnescapeString(m[1])] {
			t.Errorf("chart link %s is not one of the table's", m[1])
		}
	}
}

// What a gate wrote is attacker-controlled text (tool names and summaries
// come from the agent and the upstream server): in the overview and the
// record view it stays text, its control and bidi characters visible, and
// redacted arguments stay redacted.
func TestOverviewEscapesHostileJournal(t *testing.T) {
	g := openGateJournal(t)
	now := time.Now()
	hostile := journal.Record{
		Tool:      `drop<script>alert(1)</script>`,
		Principal: `user:<img src=x onerror=alert(2)>`,
		Summary:   "delete \u202egnp.exe\nforged: approved <b>ok</b> \u200b",
		Decision:  journal.Refused, Reason: `"><svg onload=alert(3)>` + "\u2066",
		Args: json.RawMessage(`{"path":"a.txt","password":"hunter2-secret","note":"</td><script>alert(4)</script>"}`),
	}
	g.add(now.Add(-time.Hour), 1, hostile)
	control := journal.Record{Tool: "delete_file", Summary: "delete cache.txt", Decision: journal.Executed}
	g.add(now.Add(-time.Hour), 1, control)
	e := newEnv(t, ServiceOptions{Journals: []string{g.path}})
	b := e.login("alice")
	since, until := window(time.Now())
	_, ov := b.get("/overview")
	_, list := b.get(journalLink(kindRefused, hostile.Reason, since, until))
	_, all := b.get(journalLink("", "", since, until))
	bad := []string{"<script>alert", "<img src", "<svg onload", "\u202e", "\u200b", "\u2066", "\n forged", "<b>ok", "hunter2"}
	for name, page := range map[string]string{"overview": ov, "refused list": list, "all records": all} {
		for _, s := range bad {
			if strings.Contains(page, s) {
				t.Errorf("%s holds %q", name, s)
			}
		}
	}
	for _, s := range []string{`drop&lt;script&gt;alert(1)&lt;/script&gt;`, `\u202egnp.exe\nforged: approved &lt;b&gt;ok&lt;/b&gt; \u200b`, `user:&lt;img src=x onerror=alert(2)&gt;`, `&#34;&gt;&lt;svg onload=alert(3)&gt;\u2066`, `&#34;password&#34;:&#34;[redacted]&#34;`} {
		if !strings.Contains(list, s) {
			t.Errorf("the refused list lacks the escaped %q", s)
		}
	}
	if !strings.Contains(ov, `&#34;&gt;&lt;svg onload=alert(3)&gt;\u2066`) {
		t.Error("the reason chart does not show the hostile reason code escaped")
	}
	// The hostile reason round-trips through its link: one record.
	if c := countRE.FindStringSubmatch(list); c == nil || c[1] != "1" {
		t.Errorf("the hostile reason's link lists %v records, want 1", c)
	}
	// Control: the plain record reads as written.
	if c := countRE.FindStringSubmatch(all); c == nil || c[1] != "2" || !strings.Contains(all, `<td class="mono">delete_file</td>`) || !strings.Contains(all, "delete cache.txt") {
		t.Errorf("the plain record is not listed as written (%v)", c)
	}
}

// Every overview page needs a session and the API a bearer token; a
// session cookie does not open the API (so a cross-site page cannot read
// it with the approver's cookie), nor a bearer token the pages.
func TestOverviewNeedsSignIn(t *testing.T) {
	g := openGateJournal(t)
	g.add(time.Now(), 1, journal.Record{Tool: "delete_file", Decision: journal.Executed})
	e := newEnv(t, ServiceOptions{Journals: []string{g.path}})
	since, until := window(time.Now())
	pagesToTry := []string{"/overview", journalLink(kindExecuted, "", since, until), decisionsLink(channel.StatusApproved, since, until)}
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	anon := &browser{Client: &http.Client{CheckRedirect: noRedirect}, base: e.srv.URL}
	jar, _ := cookiejar.New(nil)
	u, _ := url.Parse(e.srv.URL)
	jar.SetCookies(u, []*http.Cookie{{Name: sessionCookie, Value: randomToken()}})
	forged := &browser{Client: &http.Client{Jar: jar, CheckRedirect: noRedirect}, base: e.srv.URL}
	for _, p := range pagesToTry {
		for name, c := range map[string]*browser{"no session": anon, "forged session": forged} {
			code, body := c.get(p)
			if code != http.StatusSeeOther || strings.Contains(body, "delete_file") {
				t.Errorf("%s, GET %s: HTTP %d, want a redirect to /login", name, p, code)
			}
		}
		req, _ := http.NewRequest("GET", e.srv.URL+p, nil)
		req.Header.Set("Authorization", "Bearer "+tokenOf("alice"))
		resp, err := (&http.Client{CheckRedirect: noRedirect}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Errorf("bearer token on the page %s: HTTP %d", p, resp.StatusCode)
		}
	}
	b := e.login("alice")
	if code, _ := b.get("/api/overview"); code != 401 {
		t.Errorf("/api/overview with a session cookie and no bearer token: HTTP %d", code)
	}
	for _, h := range []string{"", "Bearer wrong-token-0123456789", "Basic " + basic("alice", tokenOf("alice"))} {
		req, _ := http.NewRequest("GET", e.srv.URL+"/api/overview", nil)
		if h != "" {
			req.Header.Set("Authorization", h)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Errorf("/api/overview with Authorization %q: HTTP %d", h, resp.StatusCode)
		}
	}
	// The pages only read: no method but GET is routed to them.
	if code, _ := b.post("/overview", url.Values{"csrf": {b.csrf}}, e.srv.URL); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /overview: HTTP %d", code)
	}
	// Control: signed in, and with the bearer token.
	for _, p := range pagesToTry {
		if code, _ := b.get(p); code != 200 {
			t.Errorf("signed in, GET %s: HTTP %d", p, code)
		}
	}
	if code, _ := e.api("GET", "/api/overview", "bob"); code != 200 {
		t.Errorf("/api/overview with bob's token: HTTP %d", code)
	}
}

// A journal read mid-write counts what is there; a journal edited after
// the fact says so, and the edited record is not counted.
func TestOverviewJournalStates(t *testing.T) {
	now := time.Now()
	write := func(t *testing.T) string {
		g := openGateJournal(t)
		g.add(now.Add(-time.Hour), 3, journal.Record{Tool: "delete_file", Decision: journal.Executed, Summary: "delete a.txt"})
		g.j.Close()
		return g.path
	}
	cases := []struct {
		name     string
		damage   func(t *testing.T, path string)
		state    string
		executed int
	}{
		{"intact", func(*testing.T, string) {}, srcIntact, 3},
		{"last line half written", func(t *testing.T, p string) {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(`{"seq":4,"prev":"`)
			f.Close()
		}, srcWriting, 3},
		{"middle record edited", func(t *testing.T, p string) {
			b, _ := os.ReadFile(p)
			lines := strings.SplitAfter(string(b), "\n")
			lines[1] = strings.Replace(lines[1], "delete a.txt", "delete b.txt", 1)
			os.WriteFile(p, []byte(strings.Join(lines, "")), 0o600)
		}, srcDamaged, 1},
		{"missing", func(t *testing.T, p string) { os.Remove(p) }, srcUnreadable, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := write(t)
			tc.damage(t, p)
			e := newEnv(t, ServiceOptions{Journals: []string{p}})
			jr := overviewAPI(t, e)["journal"].(map[string]any)
			src := jr["sources"].([]any)[0].(map[string]any)
			if src["state"] != tc.state || num(jr["totals"].(map[string]any)[kindExecuted]) != tc.executed {
				t.Fatalf("state %v, executed %v; want %s, %d", src["state"], jr["totals"], tc.state, tc.executed)
			}
			_, page := e.login("alice").get("/overview")
			if tc.state == srcDamaged && !strings.Contains(page, "JOURNAL NOT INTACT") {
				t.Error("the page does not say the journal is not intact")
			}
		})
	}
}

func TestOverviewRecordViewRefusesBadQueries(t *testing.T) {
	g := openGateJournal(t)
	with := newEnv(t, ServiceOptions{Journals: []string{g.path}})
	without := newEnv(t, ServiceOptions{})
	since, until := window(time.Now())
	cases := []struct {
		name string
		e    *env
		path string
		code int
		msg  string
	}{
		{"no since", with, "/journal?until=" + until.Format(time.RFC3339), 400, "since must be"},
		{"bad until", with, "/journal?since=" + since.Format(time.RFC3339) + "&until=tomorrow", 400, "until must be"},
		{"long reason", with, journalLink(kindRefused, strings.Repeat("x", maxFilterBytes+1), since, until), 400, "at most"},
		{"no journal given", without, journalLink(kindExecuted, "", since, until), 400, "not given any journal"},
		{"decisions, bad since", with, "/decisions?since=x", 400, "since must be"},
		{"control", with, journalLink(kindExecuted, "", since, until), 200, `<span id="record-count">0</span>`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := tc.e.login("alice").get(tc.path)
			if code != tc.code || !strings.Contains(body, tc.msg) {
				t.Fatalf("HTTP %d, want %d with %q:\n%s", code, tc.code, tc.msg, body)
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	s := time.Second
	cases := []struct {
		in   []time.Duration
		p    int
		want time.Duration
	}{
		{nil, 50, 0},
		{[]time.Duration{7 * s}, 90, 7 * s},
		{[]time.Duration{3 * s, 1 * s, 2 * s}, 50, 2 * s},
		{[]time.Duration{4 * s, 1 * s, 3 * s, 2 * s}, 50, 2 * s},
		{[]time.Duration{10 * s, 1 * s, 2 * s, 3 * s, 4 * s, 5 * s, 6 * s, 7 * s, 8 * s, 9 * s}, 90, 9 * s},
		{[]time.Duration{10 * s, 1 * s, 2 * s, 3 * s, 4 * s, 5 * s, 6 * s, 7 * s, 8 * s, 9 * s, 11 * s}, 90, 10 * s},
	}
	for _, tc := range cases {
		if got := percentile(tc.in, tc.p); got != tc.want {
			t.Errorf("p%d of %v = %v, want %v", tc.p, tc.in, got, tc.want)
		}
	}
}

// A journal from before redaction (or edited by hand, chain and all) may
// hold a secret in clear: the record view redacts again, as an export does.
func TestRecordViewRedactsAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.jsonl")
	now := time.Now().UTC()
	var file []byte
	prev := journal.Genesis
	for i, args := range []string{`{"path":"a.txt","password":"hunter2-in-clear"}`, `{"path":"b.txt"}`} {
		line, err := json.Marshal(journal.Record{Seq: uint64(i + 1), Prev: prev, Time: now.Add(-time.Hour), Call: fmt.Sprint("c", i),
			Tool: "login", Decision: journal.Executed, Args: json.RawMessage(args)})
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(line)
		prev = hex.EncodeToString(sum[:])
		file = append(append(file, line...), '\n')
	}
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, ServiceOptions{Journals: []string{path}})
	since, until := window(time.Now())
	_, page := e.login("alice").get(journalLink(kindExecuted, "", since, until))
	if c := countRE.FindStringSubmatch(page); c == nil || c[1] != "2" {
		t.Fatalf("the hand-made journal does not verify: %v\n%s", c, page)
	}
	if strings.Contains(page, "hunter2") {
		t.Error("the record view shows a secret the journal held in clear")
	}
	// Control: the rest of the arguments are shown.
	if !strings.Contains(page, `&#34;path&#34;:&#34;a.txt&#34;,&#34;password&#34;:&#34;[redacted]&#34;`) || !strings.Contains(page, `&#34;path&#34;:&#34;b.txt&#34;`) {
		t.Error("the record view does not show the redacted arguments")
	}
}
