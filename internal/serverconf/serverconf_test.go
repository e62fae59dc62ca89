package serverconf

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/internal/seal"
	"github.com/mcpsafe/mcpsafe/journal"
)

func TestBuildRefusals(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	if err := seal.WriteKeyFile(key); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("s", 64)), 0o600); err != nil {
		t.Fatal(err)
	}
	j := filepath.Join(dir, "journal.jsonl")
	errInside := errors.New("inside a root")
	for _, c := range []struct {
		name string
		cfg  Config
		want string // "" means success
	}{
		{"no audience", Config{NoJournal: true}, "audience"},
		{"shared ledger without key", Config{Audience: "a", NoJournal: true, LedgerURL: "file:" + filepath.Join(dir, "l1.db")}, "--key-file"},
		{"shared ledger with key", Config{Audience: "a", NoJournal: true, KeyFile: key, LedgerURL: "file:" + filepath.Join(dir, "l2.db")}, ""},
		{"memory ledger", Config{Audience: "a", NoJournal: true, LedgerURL: "memory:"}, ""},
		{"channel mode without approver", Config{Audience: "a", NoJournal: true, Mode: mcpsafe.ModeChannel}, "--approver-url"},
		{"approver url without secret", Config{Audience: "a", NoJournal: true, ApproverURL: "https://approve.example/hook"}, "--approver-secret-file"},
		{"channel configured", Config{Audience: "a", NoJournal: true, Mode: mcpsafe.ModeChannel, ApproverURL: "https://approve.example/hook", ApproverSecretFile: secret, ApproverTimeout: time.Minute}, ""},
		{"journal vetoed", Config{Audience: "a", JournalPath: j, CheckJournalPath: func(string) error { return errInside }}, "inside a root"},
		{"journal", Config{Audience: "a", JournalPath: j, CheckJournalPath: func(p string) error {
			if !filepath.IsAbs(p) {
				return errors.New("not absolute")
			}
			return nil
		}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := Build(context.Background(), c.cfg)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if _, err := mcpsafe.New(g.Options); err != nil {
					t.Fatalf("options do not make a gate: %v", err)
				}
				if err := g.Close(); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestParseOptIn(t *testing.T) {
	o, err := ParseOptIn("delete_file@2027-01-02")
	if err != nil || o.Tool != "delete_file" || !o.Until.Equal(time.Date(2027, 1, 2, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("%+v %v", o, err)
	}
	if o, err := ParseOptIn("delete_file"); err != nil || o.Tool != "delete_file" || !o.Until.IsZero() {
		t.Fatalf("%+v %v", o, err)
	}
	for _, bad := range []string{"delete_file@tomorrow", "delete_file@2027-13-01", "x@"} {
		if _, err := ParseOptIn(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// Servers on default settings get a journal each, twins included; a
// journal named with --journal is refused to a second server.
func TestDefaultJournalPerInstance(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	t.Setenv("XDG_STATE_HOME", state)
	open := func(c Config) (*Gate, error) {
		g, err := Build(context.Background(), c)
		if err == nil {
			t.Cleanup(func() { g.Close() })
		}
		return g, err
	}
	files, err := open(Config{Audience: "mcpsafe-files"})
	if err != nil {
		t.Fatal(err)
	}
	p1, err1 := open(Config{Audience: "mcpsafe-proxy", Instance: "\x00npx\x00server-a"})
	p2, err2 := open(Config{Audience: "mcpsafe-proxy", Instance: "\x00npx\x00server-b"})
	if err1 != nil || err2 != nil {
		t.Fatalf("two proxies for two upstreams: %v, %v", err1, err2)
	}
	seen := map[string]bool{}
	for _, g := range []*Gate{files, p1, p2} {
		if filepath.Dir(g.JournalPath) != filepath.Join(state, "mcpsafe") || seen[g.JournalPath] {
			t.Fatalf("journal %s (seen %v)", g.JournalPath, seen)
		}
		seen[g.JournalPath] = true
	}
	// The same instance twice (one configuration in two MCP clients): the
	// next free slot, never the journal the first one writes, with a note
	// beside it saying whose it is; and when every slot is taken, an error
	// that names the flags.
	twins := map[string]bool{p1.JournalPath: true}
	for range journal.DefaultSlots - 1 {
		g, err := open(Config{Audience: "mcpsafe-proxy", Instance: "\x00npx\x00server-a"})
		if err != nil || twins[g.JournalPath] || filepath.Dir(g.JournalPath) != filepath.Join(state, "mcpsafe") {
			t.Fatalf("a twin on default settings: %v, %v (taken: %v)", g, err, twins)
		}
		twins[g.JournalPath] = true
		if journal.ServerNote(g.JournalPath) != journal.ServerNote(p1.JournalPath) || !strings.Contains(journal.ServerNote(g.JournalPath), `"mcpsafe-proxy"`) {
			t.Fatalf("notes %q and %q", journal.ServerNote(g.JournalPath), journal.ServerNote(p1.JournalPath))
		}
	}
	_, err = open(Config{Audience: "mcpsafe-proxy", Instance: "\x00npx\x00server-a"})
	if err == nil || !strings.Contains(err.Error(), "--journal PATH or --audience NAME") {
		t.Fatalf("a twin with every default slot taken: %v", err)
	}
	// An explicit path in use names the flag too.
	_, err = open(Config{Audience: "other", JournalPath: files.JournalPath})
	if err == nil || !strings.Contains(err.Error(), "every server needs its own --journal PATH") {
		t.Fatalf("a duplicate --journal: %v", err)
	}
}

// Nonsense values are refused when the flags are parsed, each with a
// control that parses.
func TestFlagsRefuseNonsense(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" means it parses
	}{
		{[]string{"--ttl", "0"}, "must be positive"},
		{[]string{"--ttl", "-1s"}, "must be positive"},
		{[]string{"--ttl", "soon"}, "not a duration"},
		{[]string{"--elicit-timeout", "0s"}, "must be positive"},
		{[]string{"--approver-timeout", "-5m"}, "must be positive"},
		{[]string{"--approver-timeout", "0"}, "must be positive"},
		{[]string{"--channel-wait", "0s"}, "must be positive"},
		{[]string{"--progress-interval", "-1s"}, "must be positive"},
		{[]string{"--max-pending", "-1"}, "at least 1"},
		{[]string{"--max-pending-per-principal", "0"}, "at least 1"},
		{[]string{"--ttl", "1s", "--elicit-timeout", "1m", "--approver-timeout", "1h", "--max-pending", "1", "--max-pending-per-principal", "1"}, ""},
		{nil, ""},
	} {
		var c Config
		fl := flag.NewFlagSet("t", flag.ContinueOnError)
		fl.SetOutput(io.Discard)
		c.RegisterFlags(fl)
		err := fl.Parse(tc.args)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%v: %v", tc.args, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	var c Config
	fl := flag.NewFlagSet("t", flag.ContinueOnError)
	c.RegisterFlags(fl)
	if c.TTL != 5*time.Minute || c.MaxPending != 10_000 || c.ApproverTimeout != 0 || c.ProgressInterval != 10*time.Second {
		t.Fatalf("defaults %+v", c)
	}
}

func TestOptInExpiredAtStartup(t *testing.T) {
	now := time.Date(2026, 12, 2, 23, 0, 0, 0, time.UTC)
	for v, ok := range map[string]bool{
		"delete_file@2026-12-01": false,
		"delete_file@2026-12-02": false, // valid until the start of today: gone
		"delete_file@2026-12-03": true,
		"delete_file":            true,
	} {
		_, err := parseOptIn(v, now)
		if (err == nil) != ok || (err != nil && !strings.Contains(err.Error(), "expired")) {
			t.Errorf("%s: %v", v, err)
		}
	}
}

// --mode card with --approval-page warns at start that the page is unused;
// control: --mode auto with both warns of nothing.
func TestCardModeWarnsThePageIsUnused(t *testing.T) {
	for _, mode := range []mcpsafe.Mode{mcpsafe.ModeCard, mcpsafe.ModeAuto} {
		var log strings.Builder
		g, err := Build(context.Background(), Config{Audience: "a", NoJournal: true, Mode: mode, ApprovalCard: true,
			ApprovalPage: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(&log, nil))})
		if err != nil {
			t.Fatal(err)
		}
		g.Close()
		if warned := strings.Contains(log.String(), "--approval-page is unused with --mode card"); warned != (mode == mcpsafe.ModeCard) {
			t.Fatalf("mode %s: warned %v: %s", mode, warned, log.String())
		}
	}
}
