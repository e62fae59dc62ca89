package approvalpage

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/plan"
)

// The page's title and heading name the server the call is for and
// mcpsafe, not only the tool; control: a request without an audience
// names no server.
func TestPageTitleNamesTheServerAndMcpsafe(t *testing.T) {
	h := newHarness(t)
	r := request("title", h.clk.Now().Add(time.Minute))
	r.Audience = "mcpsafe-files"
	h.await(t, r)
	_, body := page(t, h.openedLink(t))
	for _, want := range []string{
		"<title>Approve &#34;delete_file&#34;? · &#34;mcpsafe-files&#34; · mcpsafe</title>",
		"<h1>Approve &#34;delete_file&#34; on &#34;mcpsafe-files&#34;?</h1>",
		"mcpsafe approval page",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page does not show %q:\n%s", want, body)
		}
	}
	h.await(t, request("untitled", h.clk.Now().Add(time.Minute)))
	if _, body := page(t, h.openedLink(t)); !strings.Contains(body, "<title>Approve &#34;delete_file&#34;? · mcpsafe</title>") {
		t.Errorf("without an audience:\n%s", body)
	}
}

// What would be lost says how long ago it was modified, at the moment the
// page is shown (the plan holds no relative time): 5 minutes, then, with
// the clock on, 2 hours.
func TestPageSaysHowLongAgoWhatWouldBeLostChanged(t *testing.T) {
	h := newHarness(t)
	r := request("ago", h.clk.Now().Add(3*time.Hour))
	r.PageOnly = &plan.PageOnly{Title: `What would be lost: "notes/ago.txt", first lines`, Lines: []string{"hello"},
		Modified: h.clk.Now().Add(-5*time.Minute - 3*time.Second)}
	h.await(t, r)
	link := h.openedLink(t)
	if _, body := page(t, link); !strings.Contains(body, "first lines · modified 5 minutes ago (") || !strings.Contains(body, "hello") {
		t.Fatalf("the page:\n%s", body)
	}
	h.clk.Add(2 * time.Hour)
	if _, body := page(t, link); !strings.Contains(body, "modified 2 hours ago") {
		t.Fatalf("two hours later:\n%s", body)
	}
}
