package witness

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/journal"
)

// The attacker controls the journal's directory, not the witness: a
// journal rewritten or cut back, with its local checkpoint file rewritten
// to match (even re-signed by restarting the server, which holds the key),
// passes the local check and fails against the witness. The untouched
// journal passes both.
func TestRewriteBehindWitnessRefused(t *testing.T) {
	k := newKey(t, "audit.example")
	tests := []struct {
		name   string
		attack func(t *testing.T, path string, c journal.Checkpoints, orig, ckpts []byte)
		kind   string // of the witnessed verify's CheckpointError
		local  string // what the local check says: "" when it is fooled
	}{
		{"decision edited, chain recomputed, head re-signed by a restart", func(t *testing.T, path string, c journal.Checkpoints, orig, _ []byte) {
			edited := bytes.Replace(orig, []byte(`"decision":"executed"`), []byte(`"decision":"failed"`), 1)
			must(t, os.WriteFile(path, rechain(edited), 0o600))
			must(t, os.Remove(path+journal.HeadSuffix))
			must(t, os.Remove(journal.CheckpointsPath(path)))
			// The server restarts on the rewritten journal and signs its
			// head at Close: the witness refuses that as a fork.
			err := writeJournal(t, path, c, nil)
			if err == nil || !strings.Contains(err.Error(), "fork") {
				t.Fatalf("the witness took the rewritten head: %v", err)
			}
		}, journal.CheckpointRewritten, ""},
		{"cut back to seq 4, local checkpoints cut to match", func(t *testing.T, path string, _ journal.Checkpoints, orig, ckpts []byte) {
			lines := bytes.SplitAfter(orig, []byte("\n"))
			must(t, os.WriteFile(path, bytes.Join(lines[:4], nil), 0o600))
			must(t, os.Remove(path+journal.HeadSuffix))
			notes := splitNotes(ckpts) // seq 2, 4, 6
			must(t, os.WriteFile(journal.CheckpointsPath(path), append(notes[0], notes[1]...), 0o600))
		}, journal.CheckpointTruncated, ""},
		{"last line edited, local checkpoints deleted", func(t *testing.T, path string, _ journal.Checkpoints, orig, _ []byte) {
			edited := bytes.Replace(orig, []byte(`"summary":"delete /srv/c3.txt"`), []byte(`"summary":"delete /srv/c9.txt"`), 2)
			must(t, os.WriteFile(path, rechain(edited), 0o600))
			must(t, os.Remove(path+journal.HeadSuffix))
			must(t, os.Remove(journal.CheckpointsPath(path)))
		}, journal.CheckpointRewritten, "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, k.verifier)
			path := filepath.Join(t.TempDir(), "state", "journal.jsonl")
			c := journal.Checkpoints{KeyFile: k.signerFile, Every: 2, Interval: time.Hour, WitnessURL: f.srv.URL, WitnessTokenFile: f.tokFile}
			must(t, writeJournal(t, path, c, records()))
			wc := &journal.WitnessClient{URL: f.srv.URL, Token: testToken}

			// Control: the untouched journal verifies against the witness.
			sum, _, wr, err := journal.VerifyWitnessed(context.Background(), path, k.verifier, wc, nil)
			if err != nil || sum.Records != 6 || wr.Checkpoints != 3 || wr.Latest.Seq != 6 || len(wr.Others) != 0 {
				t.Fatalf("control: %+v %+v %v", sum, wr, err)
			}
			orig, err := os.ReadFile(path)
			must(t, err)
			ckpts, err := os.ReadFile(journal.CheckpointsPath(path))
			must(t, err)

			tc.attack(t, path, c, orig, ckpts)
			// The local check is fooled, or has nothing to go on: that is
			// the gap the witness closes.
			_, _, err = journal.VerifySigned(path, k.verifier)
			if tc.local == "" && err != nil || tc.local != "" && (err == nil || !strings.Contains(err.Error(), tc.local)) {
				t.Fatalf("local check: want %q, got %v", tc.local, err)
			}
			_, _, _, err = journal.VerifyWitnessed(context.Background(), path, k.verifier, wc, nil)
			var ce *journal.CheckpointError
			if !errors.As(err, &ce) || ce.Kind != tc.kind {
				t.Fatalf("want %s against the witness, got %v", tc.kind, err)
			}
		})
	}
}

// A journal whose first line is rewritten is a new journal to the witness:
// verify against it fails until a checkpoint of the new one arrives, and
// then names the journal it replaced.
func TestReplacedJournalShowsAtTheWitness(t *testing.T) {
	k := newKey(t, "audit.example")
	f := newFixture(t, k.verifier)
	path := filepath.Join(t.TempDir(), "state", "journal.jsonl")
	c := journal.Checkpoints{KeyFile: k.signerFile, Every: 2, Interval: time.Hour, WitnessURL: f.srv.URL, WitnessTokenFile: f.tokFile}
	must(t, writeJournal(t, path, c, records()))
	oldID, err := journal.JournalID(path)
	must(t, err)
	wc := &journal.WitnessClient{URL: f.srv.URL, Token: testToken}
	orig, err := os.ReadFile(path)
	must(t, err)

	edited := bytes.Replace(orig, []byte(`"summary":"delete /srv/c1.txt"`), []byte(`"summary":"delete /srv/c0.txt"`), 1)
	must(t, os.WriteFile(path, rechain(edited), 0o600))
	must(t, os.Remove(path+journal.HeadSuffix))
	must(t, os.Remove(journal.CheckpointsPath(path)))
	// The server restarts on it without the witness and signs it locally.
	local := c
	local.WitnessURL, local.WitnessTokenFile = "", ""
	must(t, writeJournal(t, path, local, nil))
	if _, _, err := journal.VerifySigned(path, k.verifier); err != nil {
		t.Fatalf("the local check was expected to be fooled: %v", err)
	}
	_, _, _, err = journal.VerifyWitnessed(context.Background(), path, k.verifier, wc, nil)
	var ce *journal.CheckpointError
	if !errors.As(err, &ce) || ce.Kind != journal.CheckpointMissing {
		t.Fatalf("a replaced journal with nothing at the witness: %v", err)
	}
	// Restarted with the witness, its next checkpoint reaches it.
	must(t, writeJournal(t, path, c, records()[:2]))
	_, _, wr, err := journal.VerifyWitnessed(context.Background(), path, k.verifier, wc, nil)
	if err != nil || wr.Latest.Seq != 8 || len(wr.Others) != 1 || wr.Others[0].Journal != oldID || wr.Others[0].LatestSeq != 6 {
		t.Fatalf("the replaced journal is not named: %+v %v", wr, err)
	}
	contains(t, "report", wr.String(), "it was replaced")
}
