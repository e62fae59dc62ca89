package approvalpage

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
)

func get(t *testing.T, link string) (int, string) {
	t.Helper()
	res, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// An expired request's page says so, and approves nothing, for an hour;
// then the page forgets the link: it answers as for a link it never
// issued, naming no request, and stays dead when the same request ID is
// registered again (that gets a new link). A request not yet past its
// hour is kept (the control).
func TestLinkForgottenAnHourAfterExpiry(t *testing.T) {
	h := newHarness(t)
	if h.Assurance() != mcpsafe.AssuranceLocalPage {
		t.Fatalf("a page without passkeys proves %v", h.Assurance())
	}
	old := request("old", h.clk.Now().Add(time.Minute))
	link, err := h.Link(old)
	if err != nil {
		t.Fatal(err)
	}
	form, _ := page(t, link)
	h.clk.Add(time.Minute)
	if code, body := get(t, link); code != 200 || !strings.Contains(body, "Expired. Nothing was approved") {
		t.Fatalf("the expired page: %d\n%s", code, body)
	}
	if code, _ := post(t, link, h.URL(), form, "approve"); code != http.StatusGone {
		t.Fatalf("approve on the expired page: %d", code)
	}

	h.clk.Add(time.Hour) // exactly an hour past expiry: kept
	later := request("later", h.clk.Now().Add(time.Minute))
	laterLink, err := h.Link(later) // registering sweeps
	if err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, link); code != 200 || !strings.Contains(body, "Expired") {
		t.Fatalf("an hour past expiry: %d\n%s", code, body)
	}

	h.clk.Add(time.Second)
	if _, err := h.Link(request("third", h.clk.Now().Add(time.Minute))); err != nil {
		t.Fatal(err)
	}
	code, body := get(t, link)
	if code != http.StatusNotFound || !strings.Contains(body, "No such approval request") || strings.Contains(body, "notes/old.txt") || strings.Contains(body, `name="form"`) {
		t.Fatalf("the forgotten link: %d\n%s", code, body)
	}
	if code, _ := post(t, link, h.URL(), form, "approve"); code != http.StatusNotFound {
		t.Fatalf("approve on the forgotten link: %d", code)
	}
	again, err := h.Link(old)
	if err != nil || again == link {
		t.Fatalf("the same request registered again: %q %v (old link %q)", again, err, link)
	}
	if code, _ := get(t, link); code != http.StatusNotFound {
		t.Fatalf("the old link came back: %d", code)
	}

	// Control: the request registered after the first is still served,
	// and can still be taken back.
	if code, _ := get(t, laterLink); code != 200 {
		t.Fatalf("a live request's page: %d", code)
	}
	if err := h.Withdrawer().Withdraw(context.Background(), later, "the client left"); err != nil {
		t.Fatal(err)
	}
	if _, body := get(t, laterLink); !strings.Contains(body, "withdrew the request (the client left)") {
		t.Fatalf("the withdrawn page:\n%s", body)
	}
}
