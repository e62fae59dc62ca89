package policy

import (
	"os"
	"testing"
)

func mustPolicy(t testing.TB, src string) *Policy {
	t.Helper()
	p, err := Parse("test-policy.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return p
}

func writeFile(t testing.TB, p, body string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
