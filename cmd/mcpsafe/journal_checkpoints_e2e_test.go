package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// journalCmd runs `mcpsafe journal ARGS` in process.
func journalCmd(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(append([]string{"journal"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// The built `mcpsafe files` signs its journal; `journal verify --key`
// accepts that journal, and refuses it once decisions are edited and the
// chain recomputed, or once it is cut back with a witness that knows more.
func TestFilesSignedJournalEndToEnd(t *testing.T) {
	w := newWorkspace(t)
	keys := t.TempDir()
	signer, pub := filepath.Join(keys, "ck.key"), filepath.Join(keys, "ck.pub")
	if code, _, errs := journalCmd("keygen", "files.example", signer, pub); code != 0 {
		t.Fatalf("keygen: %s", errs)
	}
	if code, _, errs := journalCmd("keygen", "files.example", signer, pub); code == 0 || !strings.Contains(errs, "exists") {
		t.Fatalf("keygen must not overwrite a key: %d %s", code, errs)
	}
	witness := filepath.Join(t.TempDir(), "witness")
	cs := w.serve(&mcp.ClientOptions{ElicitationHandler: acceptAll},
		"--journal-key", signer, "--checkpoint-every", "2", "--checkpoint-witness", witness)
	for _, f := range []string{"cache.txt", "thesis.txt", "d/inner.txt"} {
		if res := call(t, cs, "delete_file", map[string]any{"path": f}); res.IsError {
			t.Fatalf("delete %s: %v", f, res.Content)
		}
	}
	cs.Close()
	// Closing stdin ends the server; its journal signs its head at close.
	var vcode int
	var vout string
	waitFor(t, "signed verify passes", func() bool {
		vcode, vout, _ = journalCmd("verify", w.journal, "--key", pub)
		return vcode == 0 && strings.Contains(vout, "latest seq 9") && strings.Contains(vout, "0 record(s) after it")
	}, func() string { return fmt.Sprintf("verify said %d %s", vcode, vout) })
	if code, out, errs := journalCmd("verify", w.journal, "--key", pub, "--checkpoints", witness); code != 0 {
		t.Fatalf("against the witness: %s %s", out, errs)
	}
	orig, err := os.ReadFile(w.journal)
	must(t, err)

	// Attack 1: an executed call becomes a declined one, chain recomputed.
	edited := bytes.Replace(orig, []byte(`"decision":"executed"`), []byte(`"decision":"declined"`), 1)
	must(t, os.WriteFile(w.journal, rechainLines(edited), 0o600))
	// The attacker drops the head file too, so that the unkeyed check has
	// nothing to compare the end with.
	must(t, os.Remove(w.journal+journal.HeadSuffix))
	if code, _, errs := journalCmd("verify", w.journal); code != 0 {
		t.Fatalf("the recomputed chain passes the unkeyed check (the gap checkpoints close): %s", errs)
	}
	if code, _, errs := journalCmd("verify", w.journal, "--key", pub); code != 1 || !strings.Contains(errs, "(rewritten)") {
		t.Fatalf("rewrite not refused: %d %s", code, errs)
	}

	// Attack 2: cut back to the checkpoint at seq 4, and the checkpoint
	// file next to the journal with it; the witness still knows seq 9.
	lines := bytes.SplitAfter(orig, []byte("\n"))
	must(t, os.WriteFile(w.journal, bytes.Join(lines[:4], nil), 0o600)) // the head file is gone already
	if code, _, errs := journalCmd("verify", w.journal, "--key", pub, "--checkpoints", witness); code != 1 || !strings.Contains(errs, "(truncated)") {
		t.Fatalf("truncation not refused: %d %s", code, errs)
	}
	// And the server refuses to reopen it and sign the cut head.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "files", "--root", w.root, "--journal", w.journal,
		"--journal-key", signer, "--checkpoint-witness", witness).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "truncated") {
		t.Fatalf("server opened a cut journal: %v %s", err, out)
	}
	// Control: the original bytes verify again.
	must(t, os.WriteFile(w.journal, orig, 0o600))
	if code, _, errs := journalCmd("verify", w.journal, "--key", pub, "--checkpoints", witness); code != 0 {
		t.Fatalf("control: %s", errs)
	}
}

func TestFilesRefusesCheckpointKeyNextToJournal(t *testing.T) {
	w := newWorkspace(t)
	keys := t.TempDir()
	inside := filepath.Join(filepath.Dir(w.journal), "ck.key")
	must(t, os.MkdirAll(filepath.Dir(inside), 0o700))
	if code, _, errs := journalCmd("keygen", "files.example", inside, filepath.Join(keys, "ck.pub")); code != 0 {
		t.Fatal(errs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "files", "--root", w.root, "--journal", w.journal, "--journal-key", inside).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "inside the journal's directory") {
		t.Fatalf("key next to the journal accepted: %v %s", err, out)
	}
	code, _, errs := journalCmd("verify", w.journal, "--checkpoints", "x")
	if code != 2 || !strings.Contains(errs, "needs --key") {
		t.Fatalf("--checkpoints without --key: %d %s", code, errs)
	}
}

// rechainLines recomputes every prev of a journal after an edit, keeping
// the rest of each line byte for byte.
func rechainLines(b []byte) []byte {
	prevField := regexp.MustCompile(`"prev":"[0-9a-f]{64}"`)
	prev := hex.EncodeToString(sha256.New().Sum(nil))
	var out []byte
	for _, l := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		l = prevField.ReplaceAll(l, []byte(`"prev":"`+prev+`"`))
		s := sha256.Sum256(l)
		prev = hex.EncodeToString(s[:])
		out = append(append(out, l...), '\n')
	}
	return out
}

// `journal export` writes the verified journal (jsonl verifies again as a
// journal; ocsf has one event per record) and refuses a damaged one.
func TestJournalExportCommand(t *testing.T) {
	td := filepath.Join("..", "..", "journal", "testdata")
	out := filepath.Join(t.TempDir(), "export.jsonl")
	if code, _, errs := journalCmd("export", filepath.Join(td, "good.jsonl"), "--format", "jsonl", "--out", out); code != 0 {
		t.Fatalf("export: %s", errs)
	}
	if code, stdout, errs := journalCmd("verify", out); code != 0 || !strings.Contains(stdout, "intact: 6 records") {
		t.Fatalf("exported jsonl does not verify: %s %s", stdout, errs)
	}
	code, stdout, _ := journalCmd("export", filepath.Join(td, "good.jsonl"), "--format", "ocsf")
	if code != 0 || strings.Count(stdout, `"class_uid":6003`) != 6 {
		t.Fatalf("ocsf export: %d %s", code, stdout)
	}
	code, stdout, errs := journalCmd("export", filepath.Join(td, "edited-summary-line3.jsonl"), "--format", "ocsf")
	if code != 1 || stdout != "" || !strings.Contains(errs, "tampered") {
		t.Fatalf("damaged journal exported: %d %q %s", code, stdout, errs)
	}
}
