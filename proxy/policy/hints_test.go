package policy

import (
	"testing"
)

func TestClosestKey(t *testing.T) {
	keys := yamlKeys(toolFile{})
	for in, want := range map[string]string{
		"irreversable": "irreversible", "autoapprove": "auto_approve", "Preview": "preview",
		"secrets": "", "x": "", "resolvr": "resolver",
	} {
		if got := closest(in, keys); got != want {
			t.Errorf("closest(%q) = %q, want %q", in, got, want)
		}
	}
}
