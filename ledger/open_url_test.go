package ledger_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/mcpsafe/mcpsafe/ledger/ledgertest"
)

// This test binary links no backend but memory: a URL of another module
// backend fails with the import that would link it in, as a configuration
// error (not ErrUnavailable, which would read as an outage).
func TestOpenNamesMissingBackend(t *testing.T) {
	for url, pkg := range map[string]string{
		"file:/tmp/x.db":                    `ledger: no backend for "file:" is linked in: import _ "github.com/mcpsafe/mcpsafe/ledger/sqlite"`,
		"redis://127.0.0.1:6379/0":          `ledger: no backend for "redis://" is linked in: import _ "github.com/mcpsafe/mcpsafe/ledger/redis"`,
		"REDISS://127.0.0.1:6379/0":         `ledger: no backend for "rediss://" is linked in: import _ "github.com/mcpsafe/mcpsafe/ledger/redis"`,
		"postgres://postgres@127.0.0.1/x":   `ledger: no backend for "postgres://" is linked in: import _ "github.com/mcpsafe/mcpsafe/ledger/postgres"`,
		"postgresql://postgres@127.0.0.1/x": `ledger: no backend for "postgresql://" is linked in: import _ "github.com/mcpsafe/mcpsafe/ledger/postgres"`,
	} {
		t.Run(url, func(t *testing.T) {
			s, err := ledger.Open(context.Background(), url)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%q) succeeded without its backend", url)
			}
			if err.Error() != pkg || errors.Is(err, ledger.ErrUnavailable) {
				t.Fatalf("Open(%q) = %v; want %s", url, err, pkg)
			}
		})
	}
}

func TestOpenRejectsBadURLs(t *testing.T) {
	for _, c := range []struct{ url, want string }{
		{"ftp://127.0.0.1/x", `ledger: unsupported URL scheme "ftp"`},
		{"memory:x", "memory store takes no options"},
		{"memory://", "memory store takes no options"},
		{"mem:", `ledger: unsupported URL scheme "mem"`},
	} {
		t.Run(c.url, func(t *testing.T) { ledgertest.OpenRefusesConfig(t, c.url, c.want) })
	}
	t.Run("control", func(t *testing.T) {
		for _, u := range []string{"", "memory:", "MEMORY:"} {
			s, err := ledger.Open(context.Background(), u)
			if err != nil {
				t.Fatalf("Open(%q): %v", u, err)
			}
			if _, ok := s.(*ledger.Memory); !ok {
				t.Fatalf("Open(%q) = %T; want *Memory", u, s)
			}
			s.Close()
		}
	})
}

// A registered scheme reaches its opener with the whole URL, whatever its
// case; a scheme registered twice, or registered empty, panics rather than
// let import order pick the backend.
func TestRegister(t *testing.T) {
	var got string
	ledger.Register("Ledger-Test-Scheme", func(_ context.Context, raw string) (ledger.Store, error) {
		got = raw
		return ledger.NewMemory(1), nil
	})
	s, err := ledger.Open(context.Background(), "ledger-test-SCHEME://x?y=1")
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if got != "ledger-test-SCHEME://x?y=1" {
		t.Fatalf("opener got %q", got)
	}
	if _, err := ledger.Open(context.Background(), "ftp://x"); err == nil || !strings.Contains(err.Error(), "ledger-test-scheme:") {
		t.Fatalf("unsupported-scheme error %v does not list the registered scheme", err)
	}
	for name, reg := range map[string]func(){
		"twice": func() {
			ledger.Register("LEDGER-TEST-SCHEME", func(context.Context, string) (ledger.Store, error) { return nil, nil })
		},
		"memory": func() {
			ledger.Register("memory", func(context.Context, string) (ledger.Store, error) { return nil, nil })
		},
		"empty":      func() { ledger.Register("", func(context.Context, string) (ledger.Store, error) { return nil, nil }) },
		"nil opener": func() { ledger.Register("ledger-test-nil", nil) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("Register did not panic")
				}
			}()
			reg()
		})
	}
}
