package journal

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
	"testing/synctest"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// ckKeys writes a fresh signer key (mode 0600) in its own directory, away
// from any journal, and returns its path and the verifier.
func ckKeys(t *testing.T, name string) (string, note.Verifier) {
	t.Helper()
	skey, vkey, err := GenerateCheckpointKey(name)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "checkpoint.key")
	if err := os.WriteFile(path, []byte(skey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return path, v
}

// signedJournal writes the sample records with a checkpoint every two
// records (seq 2, 4, 6) and a witness file, and returns the paths.
func signedJournal(t *testing.T, keyFile string) (path, witness string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "j.jsonl")
	witness = filepath.Join(t.TempDir(), "witness.checkpoints")
	writeJournal(t, path, sampleRecords(), WithCheckpoints(Checkpoints{KeyFile: keyFile, Every: 2, Interval: time.Hour, Witness: witness}))
	return path, witness
}

func wantCheckpointErr(t *testing.T, err error, kind string) {
	t.Helper()
	var ce *CheckpointError
	if !errors.As(err, &ce) || ce.Kind != kind {
		t.Fatalf("want a %s checkpoint error, got %v", kind, err)
	}
}

// rechain rewrites the prev of every line to the hash of the line before
// it, leaving the rest of each line's bytes alone, so that the plain hash
// chain verifies again: what an attacker with write access does after
// editing.
func rechain(t *testing.T, lines [][]byte) [][]byte {
	t.Helper()
	prevField := regexp.MustCompile(`"prev":"[0-9a-f]{64}"`)
	prev := Genesis
	out := make([][]byte, len(lines))
	for i, l := range lines {
		b := prevField.ReplaceAll(l, []byte(`"prev":"`+prev+`"`))
		out[i] = b
		s := sha256.Sum256(b)
		prev = hex.EncodeToString(s[:])
	}
	return out
}

// dropHead removes the head file, as an attacker who rewrites the journal
// does: without one, the unkeyed check has nothing to compare the end with.
func dropHead(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path + HeadSuffix); err != nil {
		t.Fatal(err)
	}
}

func TestSignedJournalVerifies(t *testing.T) {
	key, v := ckKeys(t, "audit.example")
	path, witness := signedJournal(t, key)
	sum, rep, err := VerifySigned(path, v)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Records != 6 || rep.Checkpoints != 3 || rep.Latest.Seq != 6 || rep.Uncovered != 0 || rep.Latest.Key != "audit.example" {
		t.Fatalf("summary %+v, report %+v", sum, rep)
	}
	if _, rep, err = VerifySigned(path, v, CheckpointsPath(path), witness); err != nil || rep.Checkpoints != 6 {
		t.Fatalf("with the witness: %+v, %v", rep, err)
	}
	if !strings.Contains(rep.String(), "agree with the chain; latest seq 6") {
		t.Fatalf("report: %s", rep)
	}
}

func TestRewrittenChainRefusedBySignedVerify(t *testing.T) {
	key, v := ckKeys(t, "audit.example")
	tests := []struct {
		name string
		line int // 0-based line whose decision is changed
		kind string
	}{
		{"decision of line 4", 3, CheckpointRewritten},
		{"decision of the last line", 5, CheckpointRewritten},
		// Editing line 1 changes the journal's id too.
		{"decision of line 1", 0, CheckpointOtherJournal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path, _ := signedJournal(t, key)
			lines := readLines(t, path)
			edited := bytes.Replace(lines[tc.line], []byte(`"decision":"`), []byte(`"decision":"x`), 1)
			edited = bytes.Replace(edited, []byte(`"decision":"xfailed"`), []byte(`"decision":"executed"`), 1)
			edited = bytes.Replace(edited, []byte(`"decision":"x`), []byte(`"decision":"`), 1)
			edited = bytes.Replace(edited, []byte(`"by":"`), []byte(`"by":"mallory-`), 1)
			lines[tc.line] = edited
			if err := os.WriteFile(path, joinLines(rechain(t, lines)), 0o600); err != nil {
				t.Fatal(err)
			}
			dropHead(t, path)
			// The attack beats the unkeyed chain...
			if _, err := VerifyFile(path); err != nil {
				t.Fatalf("rechained journal should pass the plain check: %v", err)
			}
			// ...but not the signed checkpoints,
			_, _, err := VerifySigned(path, v)
			wantCheckpointErr(t, err, tc.kind)
			// and the server refuses to open (and sign) it.
			_, err = Open(path, WithCheckpoints(Checkpoints{KeyFile: key}))
			wantCheckpointErr(t, err, tc.kind)
		})
	}
}

func TestTruncationToAnEarlierCheckpointRefused(t *testing.T) {
	key, v := ckKeys(t, "audit.example")
	path, witness := signedJournal(t, key)
	lines := readLines(t, path)
	// Cut back to seq 4, exactly where a checkpoint was signed.
	if err := os.WriteFile(path, joinLines(lines[:4]), 0o600); err != nil {
		t.Fatal(err)
	}
	dropHead(t, path)
	if _, err := VerifyFile(path); err != nil {
		t.Fatalf("cut journal should pass the plain check: %v", err)
	}
	_, _, err := VerifySigned(path, v)
	wantCheckpointErr(t, err, CheckpointTruncated)

	// The attacker also drops the later checkpoints from the file next to
	// the journal: only the witness still knows.
	raw, err := os.ReadFile(CheckpointsPath(path))
	if err != nil {
		t.Fatal(err)
	}
	notes := bytes.SplitAfter(raw, []byte("\n"+checkpointHeader)) // the first two notes end at the third header
	kept := bytes.Join(notes[:2], nil)
	kept = kept[:len(kept)-len(checkpointHeader)]
	if err := os.WriteFile(CheckpointsPath(path), kept, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, rep, err := VerifySigned(path, v); err != nil || rep.Latest.Seq != 4 {
		t.Fatalf("control: the cut checkpoint file alone agrees with the cut journal: %+v %v", rep, err)
	}
	_, _, err = VerifySigned(path, v, CheckpointsPath(path), witness)
	wantCheckpointErr(t, err, CheckpointTruncated)
	_, err = Open(path, WithCheckpoints(Checkpoints{KeyFile: key, Witness: witness}))
	wantCheckpointErr(t, err, CheckpointTruncated)
}

func TestCheckpointFromAnotherJournalRefused(t *testing.T) {
	key, v := ckKeys(t, "audit.example")
	a, _ := signedJournal(t, key)
	b := filepath.Join(t.TempDir(), "other.jsonl")
	// Same key, same records, a different start time: another journal.
	recs := sampleRecords()
	j, err := Open(b, WithCheckpoints(Checkpoints{KeyFile: key, Every: 2}))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := j.Append(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := VerifySigned(b, v); err != nil {
		t.Fatalf("control: %v", err)
	}
	_, _, err = VerifySigned(a, v, CheckpointsPath(b))
	wantCheckpointErr(t, err, CheckpointOtherJournal)
}

func TestCheckpointSignatureChecked(t *testing.T) {
	key, v := ckKeys(t, "audit.example")
	_, other := ckKeys(t, "audit.example")
	_, named := ckKeys(t, "someone.else")
	path, _ := signedJournal(t, key)
	for _, v := range []note.Verifier{other, named} {
		_, _, err := VerifySigned(path, v)
		wantCheckpointErr(t, err, CheckpointBadSignature)
	}
	// An edited checkpoint text no longer matches its signature.
	cp := CheckpointsPath(path)
	raw, err := os.ReadFile(cp)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cp, bytes.Replace(raw, []byte("seq 6\n"), []byte("seq 3\n"), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = VerifySigned(path, v)
	wantCheckpointErr(t, err, CheckpointBadSignature)
}

func TestSignedVerifyNeedsCheckpoints(t *testing.T) {
	key, v := ckKeys(t, "audit.example")
	path, _ := signedJournal(t, key)
	cp := CheckpointsPath(path)
	if err := os.WriteFile(cp, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := VerifySigned(path, v)
	wantCheckpointErr(t, err, CheckpointMissing)
	if err := os.Remove(cp); err != nil {
		t.Fatal(err)
	}
	if _, _, err := VerifySigned(path, v); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a deleted checkpoint file must fail, got %v", err)
	}
	// Control: an empty journal needs none.
	empty := filepath.Join(t.TempDir(), "e.jsonl")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(CheckpointsPath(empty), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := VerifySigned(empty, v); err != nil {
		t.Fatal(err)
	}
}

func TestCheckpointKeyPlacement(t *testing.T) {
	key, _ := ckKeys(t, "audit.example")
	raw, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	inside := filepath.Join(dir, "sub", "k")
	if err := os.MkdirAll(filepath.Dir(inside), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(inside, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	// A symlink elsewhere that points into the journal's directory.
	link := filepath.Join(t.TempDir(), "k")
	if err := os.Symlink(inside, link); err != nil {
		t.Fatal(err)
	}
	loose := filepath.Join(t.TempDir(), "k")
	if err := os.WriteFile(loose, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	jpath := filepath.Join(dir, "j.jsonl")
	tests := []struct {
		name string
		c    Checkpoints
		want string
	}{
		{"key inside the journal dir", Checkpoints{KeyFile: inside}, "inside the journal's directory"},
		{"symlink into the journal dir", Checkpoints{KeyFile: link}, "inside the journal's directory"},
		{"key readable by others", Checkpoints{KeyFile: loose}, "readable by group or others"},
		{"witness next to the journal", Checkpoints{KeyFile: key, Witness: filepath.Join(dir, "w")}, "witness"},
		{"no key", Checkpoints{}, "need a key file"},
		{"control: key elsewhere", Checkpoints{KeyFile: key, Witness: filepath.Join(t.TempDir(), "w")}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j, err := Open(jpath, WithCheckpoints(tc.c))
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				j.Close()
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				j.Close()
				t.Fatalf("want %q, got %v", tc.want, err)
			}
		})
	}
}

func TestCheckpointAtCloseAndOnInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		key, v := ckKeys(t, "audit.example")
		path := filepath.Join(t.TempDir(), "j.jsonl")
		// Every is large: only the interval or Close can sign.
		j, err := Open(path, WithCheckpoints(Checkpoints{KeyFile: key, Every: 1000, Interval: 5 * time.Millisecond}))
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Append(context.Background(), sampleRecords()[0]); err != nil {
			t.Fatal(err)
		}
		// On the bubble's clock: no checkpoint before the interval, one after.
		synctest.Wait()
		if cps, _, err := readCheckpointFile(CheckpointsPath(path), v); err != nil || len(cps) != 0 {
			t.Fatalf("checkpoints before the interval: %+v %v", cps, err)
		}
		time.Sleep(5 * time.Millisecond)
		synctest.Wait()
		if cps, _, err := readCheckpointFile(CheckpointsPath(path), v); err != nil || len(cps) != 1 || cps[0].Seq != 1 {
			t.Fatalf("no interval checkpoint: %+v %v", cps, err)
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		// Reopened with neither Every nor Interval due: only Close can sign.
		j, err = Open(path, WithCheckpoints(Checkpoints{KeyFile: key, Every: 1000, Interval: time.Hour}))
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Append(context.Background(), sampleRecords()[1]); err != nil {
			t.Fatal(err)
		}
		// (Open added an ambiguous record for the approval left without an
		// outcome, so the journal has three records now.)
		if sum, rep, err := VerifySigned(path, v); err != nil || rep.Latest.Seq != 1 || sum.LastSeq != 3 || rep.Uncovered != 2 {
			t.Fatalf("before Close: %+v %+v %v", sum, rep, err)
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		_, rep, err := VerifySigned(path, v)
		if err != nil || rep.Latest.Seq != 3 || rep.Uncovered != 0 {
			t.Fatalf("close must sign the head: %+v %v", rep, err)
		}
		// Reopening continues the same chain and the same checkpoint file.
		j, err = Open(path, WithCheckpoints(Checkpoints{KeyFile: key, Every: 1}))
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Append(context.Background(), sampleRecords()[2]); err != nil {
			t.Fatal(err)
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		if sum, rep, err := VerifySigned(path, v); err != nil || rep.Latest.Seq != sum.LastSeq || sum.LastSeq < 4 {
			t.Fatalf("after reopening: %+v %+v %v", sum, rep, err)
		}
	})
}

func TestTornCheckpointIsCutOnOpen(t *testing.T) {
	key, v := ckKeys(t, "audit.example")
	path, _ := signedJournal(t, key)
	cp := CheckpointsPath(path)
	f, err := os.OpenFile(cp, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(checkpointHeader + "\njournal ab")
	f.Close()
	_, rep, err := VerifySigned(path, v)
	if err != nil || len(rep.TornFiles) != 1 {
		t.Fatalf("a torn final checkpoint is reported, not fatal: %+v %v", rep, err)
	}
	j, err := Open(path, WithCheckpoints(Checkpoints{KeyFile: key, Every: 1}))
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Append(context.Background(), sampleRecords()[0]); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if _, rep, err := VerifySigned(path, v); err != nil || len(rep.TornFiles) != 0 || rep.Latest.Seq != 7 {
		t.Fatalf("after Open cut the torn checkpoint: %+v %v", rep, err)
	}
}
