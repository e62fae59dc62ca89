package mcpsafe_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/journal"
	"golang.org/x/sys/unix"
)

// TestFullDiskRefusesThenResumes runs the gate on a journal in a real,
// small tmpfs. While the disk is full, an approved call cannot have its
// approval recorded, so it does not run (journal_unavailable); once space
// returns, the same process runs the next approved call, and the journal
// is one intact chain with a journal-recovered record in it.
func TestFullDiskRefusesThenResumes(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=131072,mode=0700"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mounting a tmpfs (needs root or CAP_SYS_ADMIN): %v", err)
		}
		t.Skipf("SKIPPING (not CI): mounting a tmpfs needs root or CAP_SYS_ADMIN: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil && unix.Unmount(dir, unix.MNT_DETACH) != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	path := filepath.Join(dir, "journal.jsonl")
	j, err := journal.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			j.Close()
		}
	})
	var logs lockedBuffer
	e := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) {
		o.Journal = j
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	cs := e.connect(client{elicit: accept})

	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := f.Write(make([]byte, 4096)); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	f.Close()
	ctx := context.Background()
	var full error
	for i := 0; i < 10000 && full == nil; i++ { // the journal's last block may still have room
		full = j.Append(ctx, journal.Record{Tool: "delete_note", Decision: journal.Refused, Args: json.RawMessage(fmt.Sprintf(`{"pad":%d}`, i))})
	}
	if !errors.Is(full, syscall.ENOSPC) {
		t.Fatalf("the journal did not fill up: %v", full)
	}

	wantRefused(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"}), mcpsafe.ReasonJournalUnavailable)
	if !e.notes.has("cache.txt") || e.notes.executions() != 0 {
		t.Fatal("the call ran although its approval could not be journaled")
	}
	if l := logs.String(); !strings.Contains(l, "level=ERROR") || !strings.Contains(l, "approval not recorded") || !strings.Contains(l, "no space left on device") {
		t.Fatalf("the operator was not told: %s", l)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	wantExecuted(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"}))
	if e.notes.has("cache.txt") {
		t.Fatal("the approved call did not run once space returned")
	}
	closed = true
	if err := j.Close(); err != nil {
		t.Fatalf("Close = %v; the journal recovered", err)
	}
	sum, err := journal.VerifyFile(path)
	if err != nil || sum.Unresolved != 0 {
		t.Fatalf("VerifyFile = %+v, %v", sum, err)
	}
	recs := readJournal(t, path)
	var recovered bool
	for _, r := range recs {
		recovered = recovered || r.Decision == journal.Recovered
	}
	last := recs[len(recs)-2:]
	if !recovered || last[0].Decision != journal.ClientAccepted || last[1].Decision != journal.Executed || last[0].Call != last[1].Call {
		t.Fatalf("journal after recovery: recovered=%v, last %+v", recovered, last)
	}
}

// lockedBuffer is a log sink the server's goroutines and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
