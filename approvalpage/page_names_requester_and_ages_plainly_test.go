package approvalpage

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/plan"
)

// "Requested by" names a requester the gate knows; the gate's
// placeholders for "no identity" (a stdio client, HTTP without auth) are
// not shown as if they were someone.
func TestPageNamesOnlyARealRequester(t *testing.T) {
	h := newHarness(t)
	for i, tc := range []struct{ principal, want string }{
		{"stdio", ""},
		{"anonymous", ""},
		{"alice", "Requested by &#34;alice&#34;"},
		{"anonymous@example.com", "Requested by &#34;anonymous@example.com&#34;"},
	} {
		r := request(fmt.Sprint("p", i), h.clk.Now().Add(time.Hour))
		r.Principal = tc.principal
		link, err := h.Link(r)
		if err != nil {
			t.Fatal(err)
		}
		_, body := page(t, link)
		if tc.want == "" && strings.Contains(body, "Requested by") || !strings.Contains(body, tc.want) {
			t.Errorf("principal %q: want %q on the page:\n%s", tc.principal, tc.want, body)
		}
	}
}

// When what would be lost was last changed, in the largest whole unit,
// as the page's clock has it; a time ahead of that clock is said to be
// so, never shown as a negative age.
func TestPageSaysHowLongAgoInWholeUnits(t *testing.T) {
	h := newHarness(t)
	for i, tc := range []struct {
		ago  time.Duration
		want string
	}{
		{-10 * time.Minute, "modified in the future (its clock is ahead of this machine&#39;s)"},
		{30 * time.Second, "modified less than a minute ago"},
		{time.Minute, "modified 1 minute ago"},
		{59*time.Minute + 59*time.Second, "modified 59 minutes ago"},
		{time.Hour, "modified 1 hour ago"},
		{47 * time.Hour, "modified 47 hours ago"},
		{48 * time.Hour, "modified 2 days ago"},
		{24 * 400 * time.Hour, "modified 400 days ago"},
	} {
		r := request(fmt.Sprint("m", i), h.clk.Now().Add(time.Hour))
		r.PageOnly = &plan.PageOnly{Title: "What would be lost", Lines: []string{"hello"}, Modified: h.clk.Now().Add(-tc.ago)}
		link, err := h.Link(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, body := page(t, link); !strings.Contains(body, tc.want+" (") {
			t.Errorf("modified %v ago: want %q on the page:\n%s", tc.ago, tc.want, body)
		}
	}
}
