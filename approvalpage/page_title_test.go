package approvalpage

import (
	"strings"
	"testing"
	"time"
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
