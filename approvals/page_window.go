package approvals

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mcpsafe/mcpsafe/channel"
)

// PageSize is how many pending requests the page shows at once, oldest
// first. A page and each live update of it cost the same with 10 or 10,000
// requests waiting: only the window is rendered.
const PageSize = 50

// pageOf reads ?page=N (1-based; anything else is page 1).
func pageOf(r *http.Request) int {
	n, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// pageView is view for one page of the pending list: the requests of that
// window (a page past the end shows the last one), the total, and the
// history as view has it. For a live update (have != nil) cards the tab
// shows as they are (have: "id.rev" pairs, the "have" parameter) are sent
// as stubs, and the history only when it changed ("h", its rev): an update
// carries what changed, not the page again.
func (s *Service) pageView(viewer, csrf string, page int, have url.Values) pageData {
	p, total, h := s.snapshotWindow(page)
	d := pageData{User: viewer, CSRF: csrf, Pending: []item{}, History: []item{}}
	d.TotalPending = total
	d.Pages = max(1, (total+PageSize-1)/PageSize)
	d.Page = min(max(page, 1), d.Pages)
	if d.Page > 1 {
		d.PrevPage = d.Page - 1
	}
	if d.Page < d.Pages {
		d.NextPage = d.Page + 1
	}
	shown := map[string]bool{}
	for _, h := range strings.Fields(have.Get("have")) {
		shown[h] = true
	}
	for _, r := range p {
		it := itemOf(r, viewer)
		it.Slack = s.slackNote(r.Req.ID)
		it.Rev = revOf(it, it.Mine, it.Voted)
		it.Same = shown[it.ID+"."+it.Rev]
		d.Pending = append(d.Pending, it)
	}
	for _, r := range h {
		d.History = append(d.History, itemOf(r, viewer))
	}
	s.callOutcomes(d.History)
	d.HistoryRev = revOf(d.History)
	d.HistorySame = have != nil && have.Get("h") == d.HistoryRev
	s.addGrants(&d)
	return d
}

// revOf fingerprints what a card or the history shows: the JSON of its
// items (everything the template reads from) and the viewer's part. (A
// cryptographic hash, so that no crafted request content can make a
// changed card look the same as the tab's copy.)
func revOf(v ...any) string {
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// snapshotWindow is snapshot for one page: it sorts pointers and copies
// only the window's records.
func (s *Service) snapshotWindow(page int) (window []record, total int, history []record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(time.Now())
	var pending, decided []*record
	for _, e := range s.entries {
		if e.rec.Status == channel.StatusPending {
			pending = append(pending, e.rec)
		} else {
			decided = append(decided, e.rec)
		}
	}
	// The order of snapshot: oldest first, so that a new request lands at
	// the end and never pushes a card the approver is about to click.
	sort.Slice(pending, func(i, j int) bool {
		if !pending[i].Received.Equal(pending[j].Received) {
			return pending[i].Received.Before(pending[j].Received)
		}
		return pending[i].Req.ID < pending[j].Req.ID
	})
	total = len(pending)
	pages := max(1, (total+PageSize-1)/PageSize)
	from := (min(max(page, 1), pages) - 1) * PageSize
	for _, r := range pending[from:min(from+PageSize, total)] {
		window = append(window, *r)
	}
	sort.Slice(decided, func(i, j int) bool { return decided[i].DecidedAt.After(decided[j].DecidedAt) })
	for _, r := range decided[:min(len(decided), historyRows)] {
		history = append(history, *r)
	}
	return window, total, history
}
