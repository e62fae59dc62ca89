package policy

import (
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe"
)

// min_assurance names the weakest approval a tool takes, by the journal's
// word for it; anything else is an error that names the levels.
func TestMinAssurancePolicyParses(t *testing.T) {
	p := mustPolicy(t, "tools:\n  write_file:\n    min_assurance: local_page\n")
	if tp := p.Tools["write_file"]; tp.MinAssurance != mcpsafe.AssuranceLocalPage || !tp.HasSettings() {
		t.Fatalf("write_file = %+v", tp)
	}
	_, err := Parse("p.yaml", []byte("tools:\n  write_file:\n    min_assurance: high\n"))
	if err == nil || !strings.Contains(err.Error(), "p.yaml:2:") || !strings.Contains(err.Error(), "min_assurance") || !strings.Contains(err.Error(), "local_page, channel or passkey") {
		t.Fatalf("an unknown level: %v", err)
	}
}
