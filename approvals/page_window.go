package approvals

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
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
func (s *Service) pageView(viewer, csrf string, page int, have url.Values) (pageData, error) {
	p, total, h, err := s.snapshotWindow(page)
	if err != nil {
		return pageData{}, err
	}
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
	return d, nil
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

// snapshotWindow is snapshot for one page: the store reads only the
// window's records, oldest first, so that a new request lands at the end
// and never pushes a card the approver is about to click.
func (s *Service) snapshotWindow(page int) (window []record, total int, history []record, err error) {
	s.expireNow()
	ctx, cancel := storeCtx()
	defer cancel()
	if _, total, err = s.st.pending(ctx, 0, 0); err != nil {
		return nil, 0, nil, err
	}
	pages := max(1, (total+PageSize-1)/PageSize)
	from := (min(max(page, 1), pages) - 1) * PageSize
	if window, total, err = s.st.pending(ctx, from, PageSize); err != nil {
		return nil, 0, nil, err
	}
	if history, err = s.st.history(ctx, historyRows); err != nil {
		return nil, 0, nil, err
	}
	return window, total, history, nil
}
