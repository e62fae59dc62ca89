package approvalpage

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/plan"
)

// The page shows the plan's parts as the approval service does
// (internal/planhtml): a diff with its lines marked and folded past the
// first 40, never cut; a line crafted to look like markup or a plan line is
// shown as text.
func TestPageShowsThePlansDiff(t *testing.T) {
	h := newHarness(t)
	r := request("p", h.clk.Now().Add(time.Minute))
	lines := []plan.DiffLine{{Op: plan.OpHunk, Text: "-1,60 +1,60"},
		{Op: plan.OpRemove, Text: "line two"}, {Op: plan.OpAdd, Text: `</div><script>alert(1)</script>`}}
	for i := range 57 {
		lines = append(lines, plan.DiffLine{Op: " ", Text: fmt.Sprintf("context %d", i)})
	}
	r.Parts = []plan.PartView{{Kind: "diff", Path: `"notes.txt"`, Added: 1, Removed: 1, Lines: lines}}
	link, err := h.Link(r)
	if err != nil {
		t.Fatal(err)
	}
	_, body := page(t, link)
	for _, want := range []string{`class="dl del"`, `class="dl add"`, `&lt;/div&gt;&lt;script&gt;alert(1)&lt;/script&gt;`,
		`Change to &#34;notes.txt&#34;`, "expand: 20 more diff lines", "context 56"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(body, "<script>") {
		t.Fatal("a diff line became markup")
	}
}
