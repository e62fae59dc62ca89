package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The built `mcpsafe files` rotates its signed journal; `journal verify`,
// `show` and `export` read the whole set; a missing middle segment is
// refused, a pruned oldest one only with --pruned, and then only with a
// checkpoint vouching for where the journal begins.
func TestFilesRotatedJournalEndToEnd(t *testing.T) {
	w := newWorkspace(t)
	keys := t.TempDir()
	signer, pub := filepath.Join(keys, "ck.key"), filepath.Join(keys, "ck.pub")
	if code, _, errs := journalCmd("keygen", "files.example", signer, pub); code != 0 {
		t.Fatalf("keygen: %s", errs)
	}
	// One byte: every commit seals the active file.
	cs := w.serve(&mcp.ClientOptions{ElicitationHandler: acceptAll},
		"--journal-key", signer, "--journal-max-size", "1B", "--journal-max-age", "24h")
	for _, f := range []string{"cache.txt", "thesis.txt", "d/inner.txt"} {
		if res := call(t, cs, "delete_file", map[string]any{"path": f}); res.IsError {
			t.Fatalf("delete %s: %v", f, res.Content)
		}
	}
	cs.Close()
	var segs []journal.Segment
	var vcode int
	var vout string
	waitFor(t, "verify of the rotated set passes", func() bool {
		var err error
		segs, err = journal.Segments(w.journal)
		must(t, err)
		vcode, vout, _ = journalCmd("verify", w.journal, "--key", pub)
		return vcode == 0 && len(segs) >= 3 && strings.Contains(vout, "seq 1..9 in") && strings.Contains(vout, "0 record(s) after it")
	}, func() string { return fmt.Sprintf("%d segments, verify said %d %s", len(segs), vcode, vout) })
	code, out, errs := journalCmd("show", w.journal)
	if code != 0 || !strings.Contains(out, "9 of 9 records shown.") {
		t.Fatalf("show: %d %s %s", code, out, errs)
	}
	exp := filepath.Join(t.TempDir(), "export.jsonl")
	if code, _, errs := journalCmd("export", w.journal, "--format", "jsonl", "--out", exp); code != 0 {
		t.Fatalf("export: %s", errs)
	}
	b, err := os.ReadFile(exp)
	must(t, err)
	if sum, err := journal.Verify(bytes.NewReader(b)); err != nil || sum.Records != 9 {
		t.Fatalf("export of the set: %+v %v", sum, err)
	}

	// Attack: a middle segment deleted.
	mid := segs[1].Path
	saved, err := os.ReadFile(mid)
	must(t, err)
	must(t, os.Remove(mid))
	if code, _, errs := journalCmd("verify", w.journal, "--key", pub); code != 1 || !strings.Contains(errs, "a segment between them is missing") || !strings.Contains(errs, filepath.Base(segs[2].Path)) {
		t.Fatalf("missing segment not refused: %d %s", code, errs)
	}
	if code, _, _ := journalCmd("export", w.journal, "--format", "ocsf"); code != 1 {
		t.Fatal("a set missing a segment was exported")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, binary, "files", "--root", w.root, "--journal", w.journal, "--journal-key", signer).CombinedOutput(); err == nil || !strings.Contains(string(out), "missing") {
		t.Fatalf("server opened a set missing a segment: %v %s", err, out)
	}
	must(t, os.WriteFile(mid, saved, 0o600))

	// Retention: the oldest segment pruned is reported without --pruned,
	// and accepted with it, a checkpoint vouching for the new start.
	must(t, os.Remove(segs[0].Path))
	if code, _, errs := journalCmd("verify", w.journal); code != 1 || !strings.Contains(errs, "--pruned") {
		t.Fatalf("pruned set accepted silently: %d %s", code, errs)
	}
	code, out, errs = journalCmd("verify", w.journal, "--key", pub, "--pruned")
	if code != 0 || !strings.Contains(out, "PRUNED") || !strings.Contains(out, "vouches for where the journal now begins") {
		t.Fatalf("pruned set with --pruned: %d %s %s", code, out, errs)
	}
	if code, out, _ := journalCmd("show", w.journal, "--pruned"); code != 0 || !strings.Contains(out, "Pruned: seq 1..") {
		t.Fatalf("show --pruned: %d %s", code, out)
	}
}

func TestRotationFlagsRefuseBadValues(t *testing.T) {
	w := newWorkspace(t)
	for _, args := range [][]string{{"--journal-max-size", "0"}, {"--journal-max-size", "lots"}, {"--journal-max-age", "0s"}, {"--journal-max-age", "-1h"}} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, binary, append([]string{"files", "--root", w.root, "--journal", w.journal}, args...)...).CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(out), args[0][2:]) {
			t.Fatalf("%v accepted: %v %s", args, err, out)
		}
	}
}
