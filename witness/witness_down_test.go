package witness

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/journal"
	"golang.org/x/mod/sumdb/note"
)

// waitFor polls cond until it holds; the deadline only turns a hang into
// a failure.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := l.Addr().String()
	must(t, l.Close())
	return addr
}

// A witness that is down does not stop or fail the journal: records are
// written, the failure shows in WitnessHealth, and the checkpoints queued
// meanwhile are delivered once the witness is back.
func TestWitnessDownJournalKeepsWorking(t *testing.T) {
	k := newKey(t, "audit.example")
	addr := freeAddr(t)
	tokFile := filepath.Join(t.TempDir(), "token")
	must(t, os.WriteFile(tokFile, []byte(testToken), 0o600))
	path := filepath.Join(t.TempDir(), "state", "journal.jsonl")
	j, err := journal.Open(path, journal.WithCheckpoints(journal.Checkpoints{KeyFile: k.signerFile, Every: 2, Interval: time.Hour,
		WitnessURL: "http://" + addr, WitnessTokenFile: tokFile, Logger: slog.New(slog.DiscardHandler)}))
	must(t, err)
	recs := records()
	// The bound only turns a journal stalled by the witness into a failure
	// instead of a hang.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, r := range recs[:4] {
		if err := j.Append(ctx, r); err != nil {
			t.Fatalf("a record refused while the witness is down: %v", err)
		}
	}
	waitFor(t, "the witness's failure shows in WitnessHealth", func() bool { return j.WitnessHealth() != nil })
	if err := j.Health(); err != nil {
		t.Fatalf("the journal itself reports a failure: %v", err)
	}

	// The witness comes up on the address the journal was given.
	w, err := Open(Config{Dir: t.TempDir(), Keys: []note.Verifier{k.verifier}, Tokens: []string{testToken}, Logger: slog.New(slog.DiscardHandler)})
	must(t, err)
	defer w.Close()
	l, err := net.Listen("tcp", addr)
	must(t, err)
	srv := &http.Server{Handler: w.Handler()}
	go srv.Serve(l)
	defer srv.Close()
	latest := func() uint64 {
		for _, h := range w.List() {
			return h.LatestSeq
		}
		return 0
	}
	waitFor(t, "the queued checkpoints reach the witness", func() bool { return latest() == 4 && j.WitnessHealth() == nil })
	for _, r := range recs[4:] {
		must(t, j.Append(context.Background(), r))
	}
	must(t, j.Close())
	if latest() != 6 {
		t.Fatalf("Close did not deliver the final checkpoint: witness at seq %d", latest())
	}
	if hs := w.List(); len(hs) != 1 || hs[0].Checkpoints != 3 {
		t.Fatalf("held: %+v", hs)
	}
}

// A witness that stays down costs Close at most its bound, and Close says
// which checkpoints did not get there; the journal itself is intact.
func TestCloseBoundsDeliveryToADownWitness(t *testing.T) {
	k := newKey(t, "audit.example")
	tokFile := filepath.Join(t.TempDir(), "token")
	must(t, os.WriteFile(tokFile, []byte(testToken), 0o600))
	path := filepath.Join(t.TempDir(), "state", "journal.jsonl")
	c := journal.Checkpoints{KeyFile: k.signerFile, Every: 2, Interval: time.Hour, WitnessURL: "http://" + freeAddr(t),
		WitnessTokenFile: tokFile, WitnessCloseWait: 300 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
	err := writeJournal(t, path, c, records())
	if err == nil || !strings.Contains(err.Error(), "not delivered to the witness") || !strings.Contains(err.Error(), "seq 6") {
		t.Fatalf("Close with the witness down: %v", err)
	}
	if _, rep, err := journal.VerifySigned(path, k.verifier); err != nil || rep.Latest.Seq != 6 {
		t.Fatalf("the journal and its local checkpoints: %+v %v", rep, err)
	}
}

// Misconfiguration refuses to open the journal rather than running
// without the witness asked for.
func TestWitnessConfigRefused(t *testing.T) {
	k := newKey(t, "audit.example")
	dir := t.TempDir()
	good := filepath.Join(dir, "token")
	must(t, os.WriteFile(good, []byte(testToken), 0o600))
	open := filepath.Join(dir, "token-open")
	must(t, os.WriteFile(open, []byte(testToken), 0o644))
	tests := []struct {
		name, url, tok, want string
	}{
		{"plain http to another host", "http://witness.example:8444", good, "use https://"},
		{"no token file", "https://witness.example", "", "needs a token file"},
		{"token readable by others", "https://witness.example", open, "chmod 600"},
		{"token without URL", "", good, "without a witness URL"},
		{"user info in the URL", "https://u:p@witness.example", good, "no query"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "j.jsonl")
			_, err := journal.Open(path, journal.WithCheckpoints(journal.Checkpoints{KeyFile: k.signerFile, WitnessURL: tc.url, WitnessTokenFile: tc.tok}))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want %q, got %v", tc.want, err)
			}
		})
	}
	// Control: https to another host with a private token opens.
	j, err := journal.Open(filepath.Join(t.TempDir(), "j.jsonl"), journal.WithCheckpoints(journal.Checkpoints{KeyFile: k.signerFile, WitnessURL: "https://witness.example", WitnessTokenFile: good}))
	must(t, err)
	if err := j.Close(); err != nil && !errors.Is(err, journal.ErrClosed) {
		t.Fatalf("closing an empty journal: %v", err)
	}
}
