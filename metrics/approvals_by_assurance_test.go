package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

// Approvals are counted by how strongly they were proven: a click on the
// local page and a passkey on it are different series.
func TestApprovalsCountedByAssurance(t *testing.T) {
	m := New()
	m.Approved("delete_file", "page-approved", "local_page")
	m.Approved("delete_file", "page-approved", "passkey")
	m.Approved("delete_file", "page-approved", "passkey")
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`mcpsafe_approvals_total{assurance="local_page",decision="page-approved",tool="delete_file"} 1`,
		`mcpsafe_approvals_total{assurance="passkey",decision="page-approved",tool="delete_file"} 2`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
