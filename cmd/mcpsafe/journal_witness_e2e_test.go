package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startWitness runs the built `mcpsafe journal witness serve` on addr and
// waits until it listens.
func startWitness(t *testing.T, addr, dir, pub, tokFile string) {
	t.Helper()
	cmd := exec.Command(binary, "journal", "witness", "serve", "--dir", dir, "--key", pub, "--token-file", tokFile, "--listen", addr)
	out, err := cmd.StdoutPipe()
	must(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	must(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.Contains(line, "listening on http://"+addr) {
		t.Fatalf("witness did not start: %q %v %s", line, err, stderr.String())
	}
}

// The built binaries end to end: `mcpsafe files` sends its checkpoints to
// `mcpsafe journal witness serve`. Calls run while the witness is down; its
// checkpoints arrive once it is up; `journal verify --witness-url` passes
// on the untouched journal and refuses it once it is rewritten and re-signed
// by a restarted server (which the local checkpoint file cannot show).
func TestFilesHTTPWitnessEndToEnd(t *testing.T) {
	w := newWorkspace(t)
	keys := t.TempDir()
	signer, pub := filepath.Join(keys, "ck.key"), filepath.Join(keys, "ck.pub")
	if code, _, errs := journalCmd("keygen", "files.example", signer, pub); code != 0 {
		t.Fatalf("keygen: %s", errs)
	}
	tok := filepath.Join(keys, "witness.token")
	must(t, os.WriteFile(tok, []byte("0123456789abcdef0123456789abcdef-e2e\n"), 0o600))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := l.Addr().String()
	must(t, l.Close())
	url := "http://" + addr
	flags := []string{"--journal-key", signer, "--checkpoint-every", "2", "--journal-witness-url", url, "--journal-witness-token-file", tok}

	// The witness is down: calls still run.
	cs := w.serve(&mcp.ClientOptions{ElicitationHandler: acceptAll}, flags...)
	if res := call(t, cs, "delete_file", map[string]any{"path": "cache.txt"}); res.IsError {
		t.Fatalf("delete with the witness down: %v", res.Content)
	}
	witnessDir := filepath.Join(t.TempDir(), "witness")
	startWitness(t, addr, witnessDir, pub, tok)
	for _, f := range []string{"thesis.txt", "d/inner.txt"} {
		if res := call(t, cs, "delete_file", map[string]any{"path": f}); res.IsError {
			t.Fatalf("delete %s: %v", f, res.Content)
		}
	}
	cs.Close()
	verify := func() (int, string, string) {
		return journalCmd("verify", w.journal, "--key", pub, "--witness-url", url, "--witness-token-file", tok)
	}
	// Closing stdin ends the server; its final checkpoint goes to the
	// witness at Close.
	var vcode int
	var vout string
	waitFor(t, "witnessed verify passes", func() bool {
		vcode, vout, _ = verify()
		return vcode == 0 && strings.Contains(vout, "witnessed: ") && strings.Contains(vout, "latest seq 9")
	}, func() string { return fmt.Sprintf("verify said %d %s", vcode, vout) })
	orig, err := os.ReadFile(w.journal)
	must(t, err)
	origCk, err := os.ReadFile(journal.CheckpointsPath(w.journal))
	must(t, err)
	origHead, err := os.ReadFile(w.journal + journal.HeadSuffix)
	must(t, err)

	// The attack: an executed call becomes a failed one, the chain is
	// recomputed, the head file and the checkpoints dropped, and the server
	// restarted so that it signs the rewritten head with its own key.
	edited := bytes.Replace(orig, []byte(`"decision":"executed"`), []byte(`"decision":"failed"`), 1)
	must(t, os.WriteFile(w.journal, rechainLines(edited), 0o600))
	must(t, os.Remove(w.journal+journal.HeadSuffix))
	must(t, os.Remove(journal.CheckpointsPath(w.journal)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, binary, append([]string{"files", "--root", w.root, "--journal", w.journal}, flags...)...).CombinedOutput()
	if !strings.Contains(string(out), "fork") {
		t.Fatalf("the restarted server does not report the witness's refusal: %s", out)
	}
	if code, _, errs := journalCmd("verify", w.journal, "--key", pub); code != 0 {
		t.Fatalf("the local checkpoints were expected to be fooled by the re-signing: %s", errs)
	}
	if code, _, errs := verify(); code != 1 || !strings.Contains(errs, "(rewritten)") {
		t.Fatalf("rewrite not refused against the witness: %d %s", code, errs)
	}
	// The witness kept the refused checkpoint as evidence.
	id, err := journal.JournalID(w.journal)
	must(t, err)
	ev, err := os.ReadFile(filepath.Join(witnessDir, id+".refused"))
	must(t, err)
	if !strings.Contains(string(ev), `"kind":"fork"`) {
		t.Fatalf("evidence: %s", ev)
	}

	// Control: the original bytes verify against the witness again.
	must(t, os.WriteFile(w.journal, orig, 0o600))
	must(t, os.WriteFile(journal.CheckpointsPath(w.journal), origCk, 0o600))
	must(t, os.WriteFile(w.journal+journal.HeadSuffix, origHead, 0o600))
	if code, out, errs := verify(); code != 0 {
		t.Fatalf("control: %s %s", out, errs)
	}
	if code, _, errs := journalCmd("verify", w.journal, "--key", pub, "--witness-url", url); code != 2 || !strings.Contains(errs, "go together") {
		t.Fatalf("--witness-url without a token file: %d %s", code, errs)
	}
}
