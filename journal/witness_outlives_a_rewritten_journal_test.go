package journal_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/witness"
)

// Whoever controls the journal's directory can rewrite the journal, drop
// its head file and delete its local checkpoints; with the key stolen too,
// they can sign the rewritten chain. What the witness already holds they
// cannot take back: these tests play each of those attacks against a real
// witness and check that VerifyWitnessed (`journal verify --witness-url`)
// fails for each, and that the witness refuses to be told another history.

// rewrite edits the journal at path as an attacker with write access
// would: edit the lines, recompute every prev so the plain chain holds,
// and delete the head file and the local checkpoints that would betray it.
func rewrite(t *testing.T, path string, edit func(lines [][]byte) [][]byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := edit(bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")))
	prevField := regexp.MustCompile(`"prev":"[0-9a-f]{64}"`)
	prev := journal.Genesis
	var out []byte
	for _, l := range lines {
		l = prevField.ReplaceAll(l, []byte(`"prev":"`+prev+`"`))
		s := sha256.Sum256(l)
		prev = hex.EncodeToString(s[:])
		out = append(append(out, l...), '\n')
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, side := range []string{path + journal.HeadSuffix, journal.CheckpointsPath(path)} {
		if err := os.Remove(side); err != nil {
			t.Fatal(err)
		}
	}
}

// editBy changes who decided line i (0-based).
func editBy(i int) func([][]byte) [][]byte {
	return func(lines [][]byte) [][]byte {
		lines[i] = bytes.Replace(lines[i], []byte(`"by":"gate"`), []byte(`"by":"mallory"`), 1)
		return lines
	}
}

func wantKind(t *testing.T, err error, kind string) {
	t.Helper()
	var ce *journal.CheckpointError
	if !errors.As(err, &ce) || ce.Kind != kind {
		t.Fatalf("want a %s checkpoint error, got %v", kind, err)
	}
}

// Control: a journal whose checkpoints reached the witness verifies
// against it, with or without its local checkpoint file (the witness is
// the copy that counts), and the report says what the witness holds.
func TestWitnessedJournalVerifiesAgainstTheWitness(t *testing.T) {
	k := newCKKey(t, "audit.example")
	f := newWitnessFixture(t, k.verifier)
	path := filepath.Join(t.TempDir(), "j.jsonl")
	writeWitnessed(t, f, k, path, calls())
	sum, rep, wr, err := journal.VerifyWitnessed(context.Background(), path, k.verifier, f.client(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Records != 6 || rep.Checkpoints != 6 || rep.Uncovered != 0 || wr.Checkpoints != 3 || wr.Latest.Seq != 6 ||
		wr.Latest.Key != "audit.example" || len(wr.Others) != 0 || wr.Thinned != 0 {
		t.Fatalf("summary %+v\nreport %+v\nwitness %+v", sum, rep, wr)
	}
	id, err := journal.JournalID(path)
	if err != nil || wr.Latest.Journal != id {
		t.Fatalf("the witnessed checkpoint names journal %s, the journal is %s (%v)", wr.Latest.Journal, id, err)
	}
	s := wr.String()
	wantIn(t, "report", s, "witnessed: 3 checkpoint(s) held by "+f.srv.URL+" agree with the chain; latest seq 6 at ")
	if strings.Contains(s, "note:") {
		t.Fatalf("a note on a plain report: %s", s)
	}

	if err := os.Remove(journal.CheckpointsPath(path)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := journal.VerifySigned(path, k.verifier); err == nil {
		t.Fatal("without checkpoint files the local check passed")
	}
	if _, rep, wr, err = journal.VerifyWitnessed(context.Background(), path, k.verifier, f.client(), nil); err != nil || rep.Checkpoints != 3 || wr.Checkpoints != 3 {
		t.Fatalf("with the witness alone: %+v %+v %v", rep, wr, err)
	}
}

// Each rewrite leaves a chain that verifies on its own (no head file to
// contradict it, no local checkpoint left), and each fails against the
// witness: a rewritten record, records cut off the end, a rewritten first
// line (a journal the witness has never seen). With the key stolen, the
// attacker also re-signs the rewritten chain locally, with the witness
// taken out of the journal's configuration: the local checkpoints then
// agree with the chain, and the witness's still do not.
func TestRewriteBehindTheWitnessesBackFailsVerify(t *testing.T) {
	k := newCKKey(t, "audit.example")
	for _, tc := range []struct {
		name   string
		edit   func([][]byte) [][]byte
		resign bool
		kind   string
		want   string
	}{
		{"a decision's approver rewritten", editBy(3), false, journal.CheckpointRewritten, "line 4 hashes to"},
		{"the last two records cut", func(l [][]byte) [][]byte { return l[:4] }, false, journal.CheckpointTruncated, "covers seq 6, but the journal ends at seq 4"},
		{"line 1 rewritten", editBy(0), false, journal.CheckpointMissing, "6 records and no signed checkpoint in http://"},
		{"rewritten and re-signed locally", editBy(3), true, journal.CheckpointRewritten, "line 4 hashes to"},
		{"line 1 rewritten and re-signed locally", editBy(0), true, journal.CheckpointMissing, "holds no checkpoint of this journal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newWitnessFixture(t, k.verifier)
			path := filepath.Join(t.TempDir(), "j.jsonl")
			writeWitnessed(t, f, k, path, calls())
			rewrite(t, path, tc.edit)
			if _, err := journal.VerifyFile(path); err != nil {
				t.Fatalf("the attack is clumsy, the plain chain already fails: %v", err)
			}
			if tc.resign {
				writeSigned(t, path, journal.Checkpoints{KeyFile: k.file, Every: 2}, nil)
				if _, _, err := journal.VerifySigned(path, k.verifier); err != nil {
					t.Fatalf("the re-signed local checkpoints: %v", err)
				}
			}
			_, _, _, err := journal.VerifyWitnessed(context.Background(), path, k.verifier, f.client(), nil)
			wantKind(t, err, tc.kind)
			wantIn(t, "error", err.Error(), tc.want)
		})
	}
}

// With the key stolen as well, the attacker re-signs the rewritten chain
// by opening it and closing it: the witness refuses the checkpoint (a
// fork at a seq it holds; a rollback below its latest), Close says so,
// and verify still fails against the witness's copy.
func TestStolenKeyCannotReSignWitnessedHistory(t *testing.T) {
	k := newCKKey(t, "audit.example")
	for _, tc := range []struct {
		name string
		edit func([][]byte) [][]byte
		seq  string
		kind string // the witness's word for it
		err  string // VerifyWitnessed's kind
	}{
		{"rewritten and re-signed", editBy(3), "seq 6", witness.RefusedFork, journal.CheckpointRewritten},
		// Witnessed every 3 (seq 3, 6): cut back to seq 4, which it
		// never held.
		{"cut back and re-signed", func(l [][]byte) [][]byte { return l[:4] }, "seq 4", witness.RefusedRollback, journal.CheckpointTruncated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newWitnessFixture(t, k.verifier)
			path := filepath.Join(t.TempDir(), "j.jsonl")
			c := f.checkpoints(k, nil)
			if tc.kind == witness.RefusedRollback {
				c.Every = 3
			}
			writeSigned(t, path, c, calls())
			rewrite(t, path, tc.edit)
			j, err := journal.Open(path, journal.WithCheckpoints(c))
			if err != nil {
				t.Fatal(err)
			}
			err = j.Close()
			wantIn(t, "Close", errString(err), "refused checkpoint "+tc.seq, "409 Conflict", `"kind":"`+tc.kind+`"`)
			// The local checkpoint the attacker signed agrees with the
			// rewritten chain; the witness's do not.
			if _, _, err := journal.VerifySigned(path, k.verifier); err != nil {
				t.Fatalf("the re-signed local checkpoints: %v", err)
			}
			_, _, _, err = journal.VerifyWitnessed(context.Background(), path, k.verifier, f.client(), nil)
			wantKind(t, err, tc.err)
			if hs := f.w.List(); len(hs) != 1 || hs[0].LatestSeq != 6 || hs[0].Refused != 1 {
				t.Fatalf("the witness holds %+v", hs)
			}
		})
	}
}

// A journal whose first line is rewritten is a new journal to the
// witness, which takes its checkpoints: it verifies, but the report names
// the journal it replaced (same key), with the checkpoint that journal's
// rewrite had refused. A journal signed by another key on the same
// witness is not named.
func TestReplacedJournalIsNamedByTheWitnessReport(t *testing.T) {
	k := newCKKey(t, "audit.example")
	other := newCKKey(t, "other.example")
	f := newWitnessFixture(t, k.verifier, other.verifier)
	dir := t.TempDir()
	path := filepath.Join(dir, "j.jsonl")
	writeWitnessed(t, f, k, path, calls())
	writeWitnessed(t, f, other, filepath.Join(dir, "other", "j.jsonl"), calls())
	origID, err := journal.JournalID(path)
	if err != nil {
		t.Fatal(err)
	}
	// First a fork, refused; then the whole history replaced.
	rewrite(t, path, editBy(3))
	j, err := journal.Open(path, journal.WithCheckpoints(f.checkpoints(k, nil)))
	if err != nil {
		t.Fatal(err)
	}
	wantIn(t, "the fork", errString(j.Close()), "refused")
	rewrite(t, path, editBy(0))
	j, err = journal.Open(path, journal.WithCheckpoints(f.checkpoints(k, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatalf("the replacement's checkpoint: %v", err)
	}

	_, _, wr, err := journal.VerifyWitnessed(context.Background(), path, k.verifier, f.client(), nil)
	if err != nil {
		t.Fatalf("the replacement is a consistent journal: %v", err)
	}
	if len(wr.Others) != 1 || wr.Others[0].Journal != origID || wr.Others[0].LatestSeq != 6 || wr.Others[0].Refused != 1 {
		t.Fatalf("others: %+v (the original is %s)", wr.Others, origID)
	}
	wantIn(t, "report", wr.String(), "the witness also holds 1 other journal(s) signed by audit.example; if this journal is meant to continue one of them, it was replaced",
		"journal "+origID+": latest seq 6 at ", ", 1 checkpoint(s) refused as contradicting it")
}

// A witness at its per-journal limit thins the older checkpoints: the
// journal still verifies against what is kept, and the report says how
// many were dropped.
func TestThinnedWitnessIsReported(t *testing.T) {
	k := newCKKey(t, "audit.example")
	f := newWitnessFixtureWith(t, witness.Config{MaxJournalBytes: 4 << 10}, k.verifier)
	c := f.checkpoints(k, nil)
	c.Every = 1
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := journal.Open(path, journal.WithCheckpoints(c))
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		appendAll(t, j, calls()[:2])
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	_, _, wr, err := journal.VerifyWitnessed(context.Background(), path, k.verifier, f.client(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if wr.Thinned == 0 || wr.Checkpoints+wr.Thinned != 40 || wr.Latest.Seq != 40 {
		t.Fatalf("witness report %+v", wr)
	}
	wantIn(t, "report", wr.String(), "note: the witness thinned ", " older checkpoint(s) of this journal")
}

// A rotated journal whose oldest segments were pruned has lost its first
// line, so its id is the one its own checkpoints name: it verifies
// against the witness with them. Pruned and stripped of its local
// checkpoints as well, it has nothing left that says which journal it is,
// and fails rather than pass as a journal the witness never saw.
func TestPrunedJournalVerifiesAgainstTheWitnessByItsCheckpoints(t *testing.T) {
	k := newCKKey(t, "audit.example")
	f := newWitnessFixture(t, k.verifier)
	dir := t.TempDir()
	path := filepath.Join(dir, "j.jsonl")
	// Each record's line is the same length: rotate every 2 records,
	// with a checkpoint at each rotation.
	c := f.checkpoints(k, nil)
	c.Every = 1000
	probe := filepath.Join(t.TempDir(), "probe.jsonl")
	writeSigned(t, probe, journal.Checkpoints{KeyFile: k.file}, calls()[1:2])
	pb, err := os.ReadFile(probe)
	if err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(path, journal.WithCheckpoints(c), journal.WithMaxBatch(1),
		journal.WithRotation(journal.Rotation{MaxBytes: int64(len(pb)) + 1}))
	if err != nil {
		t.Fatal(err)
	}
	outcome := calls()[1]
	for range 6 {
		appendAll(t, j, []journal.Record{outcome})
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	segs, err := journal.Segments(path)
	if err != nil || len(segs) < 3 {
		t.Fatalf("segments: %+v %v", segs, err)
	}
	origID := ""
	if _, rep, err := journal.VerifySigned(path, k.verifier); err != nil {
		t.Fatal(err)
	} else {
		origID = rep.Latest.Journal
	}
	if err := os.Remove(segs[0].Path); err != nil {
		t.Fatal(err)
	}
	if id, err := journal.JournalID(path); err != nil || id != "" {
		t.Fatalf("a pruned journal's id read from its files: %q %v", id, err)
	}
	sum, _, wr, err := journal.VerifyWitnessed(context.Background(), path, k.verifier, f.client(), nil, journal.AllowPruned())
	if err != nil {
		t.Fatal(err)
	}
	if sum.FirstSeq <= 1 || wr.Checkpoints == 0 || wr.Latest.Journal != origID || wr.Latest.Seq != 6 {
		t.Fatalf("summary %+v, witness %+v", sum, wr)
	}

	if err := os.Remove(journal.CheckpointsPath(path)); err != nil {
		t.Fatal(err)
	}
	_, _, wr, err = journal.VerifyWitnessed(context.Background(), path, k.verifier, f.client(), nil, journal.AllowPruned())
	wantKind(t, err, journal.CheckpointMissing)
	if wr.Checkpoints != 0 {
		t.Fatalf("the witness was asked about some journal: %+v", wr)
	}
}
