package channel

import (
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe/approver"
)

// The link is the service's own page at the request's card; an address a
// person cannot safely log in at, or one that is not an origin, is refused
// when the gate starts.
func TestServiceLinkIsTheServicesPageAtTheRequest(t *testing.T) {
	for _, bad := range []string{"http://approvals.example.com", "https://approvals.example.com/webhook",
		"https://u:p@approvals.example.com", "https://approvals.example.com/?a=b", "approvals.example.com", ""} {
		if _, err := ServiceLink(bad); err == nil {
			t.Errorf("ServiceLink(%q) accepted", bad)
		}
	}
	for origin, want := range map[string]string{
		"https://approvals.example.com":  "https://approvals.example.com/#req-r1%2F..",
		"https://approvals.example.com/": "https://approvals.example.com/#req-r1%2F..",
		"http://127.0.0.1:8080":          "http://127.0.0.1:8080/#req-r1%2F..",
	} {
		link, err := ServiceLink(origin)
		if err != nil {
			t.Fatalf("ServiceLink(%q): %v", origin, err)
		}
		if got, err := link(approver.Request{ID: "r1/.."}); err != nil || got != want {
			t.Errorf("link from %q = %q, %v; want %q", origin, got, err, want)
		}
		if _, err := link(approver.Request{}); err == nil || !strings.Contains(err.Error(), "id") {
			t.Errorf("a request without an id got a link: %v", err)
		}
	}
}
