package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// rotatedJournal writes n sample-style records to a journal that rotates
// every `every` records (by size: each record's line is the same length,
// so MaxBytes of every-1 lines plus one byte seals after `every`), with
// checkpoints when keyFile is set. It returns the path and the set's
// files after Close.
func rotatedJournal(t *testing.T, n, every int, keyFile string) (string, []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "j.jsonl")
	opts := []Option{WithClock(stepClock())}
	if keyFile != "" {
		opts = append(opts, WithCheckpoints(Checkpoints{KeyFile: keyFile, Every: 1000, Interval: time.Hour}))
	}
	probe := filepath.Join(t.TempDir(), "probe.jsonl")
	writeJournal(t, probe, []Record{rotRecord(1)})
	line := int64(len(readLines(t, probe)[0]) + 1)
	opts = append(opts, WithRotation(Rotation{MaxBytes: line*int64(every-1) + 1}), WithMaxBatch(1))
	j, err := Open(path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if err := j.Append(context.Background(), rotRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Health(); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	files, err := SetFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, files
}

// rotRecord is a record whose encoded line has the same length for i in
// 1..9 (one-digit call ids), with a secret argument to check redaction.
func rotRecord(i int) Record {
	return Record{Call: fmt.Sprintf("c%d", i), Tool: "rm", Decision: Refused,
		Args: json.RawMessage(`{"path":"/srv/x","password":"hunter2"}`)}
}

func TestRotationAcrossThreeFilesVerifies(t *testing.T) {
	path, files := rotatedJournal(t, 9, 3, "")
	want := []string{SegmentPath(path, 1, 3), SegmentPath(path, 4, 6), SegmentPath(path, 7, 9), path}
	if strings.Join(files, " ") != strings.Join(want, " ") {
		t.Fatalf("files %v, want %v", files, want)
	}
	sum, err := VerifyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Records != 9 || sum.FirstSeq != 1 || sum.LastSeq != 9 || sum.Files != 4 {
		t.Fatalf("%+v", sum)
	}
	// The chain links across files: the first record of each segment after
	// the first names the last line of the one before it.
	for i := 1; i < 3; i++ {
		prevLines, lines := readLines(t, files[i-1]), readLines(t, files[i])
		rec, _ := parseLine(lines[0])
		if rec.Prev != hashLine(prevLines[len(prevLines)-1]) {
			t.Fatalf("%s does not link to %s", files[i], files[i-1])
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Fatalf("active file after sealing at 9: %v %v", fi, err)
	}
	// Reopening continues the same chain in the active file.
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Append(context.Background(), rotRecord(1)); err != nil {
		t.Fatal(err)
	}
	j.Close()
	if sum, err := VerifyFile(path); err != nil || sum.LastSeq != 10 {
		t.Fatalf("%+v %v", sum, err)
	}
	if s := sum.String(); !strings.Contains(s, "seq 1..9 in 4 files") {
		t.Fatal(s)
	}
}

func TestRotationByAge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	// The step clock moves one second per reading: records are stamped
	// one or two seconds apart, so a 3s age seals every few records.
	j, err := Open(path, WithClock(stepClock()), WithRotation(Rotation{MaxAge: 3 * time.Second}), WithMaxBatch(1))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 9; i++ {
		if err := j.Append(context.Background(), rotRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	segs, err := Segments(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) < 3 {
		t.Fatalf("%d segments, want at least 3: %v", len(segs), segs)
	}
	for _, s := range segs {
		recs := readLines(t, s.Path)
		first, _ := parseLine(recs[0])
		last, _ := parseLine(recs[len(recs)-1])
		if last.Time.Sub(first.Time) >= 3*time.Second {
			t.Fatalf("%s spans %v, past the 3s age", s.Path, last.Time.Sub(first.Time))
		}
	}
	if sum, err := VerifyFile(path); err != nil || sum.Records != 9 {
		t.Fatalf("%+v %v", sum, err)
	}
}

func TestRotationOptionsRefused(t *testing.T) {
	for _, r := range []Rotation{{MaxBytes: -1}, {MaxAge: -time.Second}} {
		if _, err := Open(filepath.Join(t.TempDir(), "j.jsonl"), WithRotation(r)); err == nil {
			t.Fatalf("%+v accepted", r)
		}
	}
}

// TestRotatedSetAttacks: each way of editing a set of files is refused,
// and names the file it is in; the untouched set is the control.
func TestRotatedSetAttacks(t *testing.T) {
	keyFile, v := ckKeys(t, "test")
	rename := func(t *testing.T, from, to string) {
		t.Helper()
		if err := os.Rename(from, to); err != nil {
			t.Fatal(err)
		}
	}
	swap := func(t *testing.T, _ string, f []string) {
		tmp := f[0] + ".tmp"
		rename(t, f[0], tmp)
		rename(t, f[1], f[0])
		rename(t, tmp, f[1])
	}
	for _, tc := range []struct {
		name   string
		attack func(t *testing.T, path string, files []string)
		pruned bool
		// want: "ok", or the substring the unkeyed verify reports, and
		// what the keyed verify reports ("" = same as unkeyed).
		want, wantKeyed string
		file            int // index into files the error names; -1: none
	}{
		{name: "control", attack: func(*testing.T, string, []string) {}, want: "ok", wantKeyed: "ok"},
		{name: "middle segment deleted", attack: func(t *testing.T, _ string, f []string) { os.Remove(f[1]) },
			want: "a segment between them is missing", file: 2},
		{name: "oldest segment deleted", attack: func(t *testing.T, _ string, f []string) { os.Remove(f[0]) },
			want: "the journal begins at seq 4", file: 1},
		{name: "oldest segment pruned, accepted explicitly", attack: func(t *testing.T, _ string, f []string) { os.Remove(f[0]) },
			pruned: true, want: "ok", wantKeyed: "ok"},
		{name: "segments swapped by name", attack: swap, want: "the journal begins at seq 4", file: 0},
		{name: "segments swapped by name, pruning allowed", attack: swap, pruned: true, want: "its name says", file: 0},
		{name: "segment renamed out of order", attack: func(t *testing.T, path string, f []string) {
			rename(t, f[1], SegmentPath(path, 10, 12))
		}, want: "a segment between them is missing", file: 2},
		{name: "last line of a segment edited", attack: func(t *testing.T, _ string, f []string) {
			lines := readLines(t, f[0])
			lines[2] = bytes.Replace(lines[2], []byte(`"c3"`), []byte(`"c9"`), 1)
			os.WriteFile(f[0], joinLines(lines), 0o600)
		}, want: "line 3 of j.jsonl.000000000001-000000000003 was edited", file: 0},
		{name: "newline of a segment's last line removed", attack: func(t *testing.T, _ string, f []string) {
			b, _ := os.ReadFile(f[0])
			os.WriteFile(f[0], bytes.TrimSuffix(b, []byte("\n")), 0o600)
		}, want: "the last line of a sealed segment has no newline", file: 0},
		{name: "segment rewritten, chain recomputed over the whole set", attack: func(t *testing.T, path string, f []string) {
			var all [][]byte
			var counts []int
			for _, name := range f[:3] {
				l := readLines(t, name)
				counts = append(counts, len(l))
				all = append(all, l...)
			}
			all[1] = bytes.Replace(all[1], []byte(`"c2"`), []byte(`"c8"`), 1)
			all = rechain(t, all)
			for i, name := range f[:3] {
				os.WriteFile(name, joinLines(all[:counts[i]]), 0o600)
				all = all[counts[i]:]
			}
			dropHead(t, path)
		}, want: "ok", wantKeyed: "rewritten"},
		{name: "newest segments cut back to an earlier checkpoint", attack: func(t *testing.T, path string, f []string) {
			// The active file and the last segment go; the middle
			// segment becomes the active file, and the head is dropped.
			os.Remove(f[3])
			os.Remove(f[2])
			rename(t, f[1], path)
			dropHead(t, path)
		}, want: "ok", wantKeyed: "truncated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, files := rotatedJournal(t, 9, 3, keyFile)
			tc.attack(t, path, files)
			var opts []SetOption
			if tc.pruned {
				opts = append(opts, AllowPruned())
			}
			_, err := VerifyFile(path, opts...)
			check := func(err error, want string) {
				t.Helper()
				if want == "ok" {
					if err != nil {
						t.Fatalf("want intact, got %v", err)
					}
					return
				}
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("want %q, got %v", want, err)
				}
			}
			check(err, tc.want)
			var te *TamperError
			if tc.want != "ok" && errors.As(err, &te) && te.File != files[tc.file] {
				t.Fatalf("error names %q, want %q", te.File, files[tc.file])
			}
			keyed := tc.wantKeyed
			if keyed == "" {
				keyed = tc.want
			}
			_, rep, err := VerifySignedSet(path, v, nil, opts...)
			check(err, keyed)
			if tc.pruned && keyed == "ok" && (rep.Start == nil || rep.Start.Seq != 3 || !strings.Contains(rep.String(), "pruned")) {
				t.Fatalf("pruned set reported as %+v", rep)
			}
			// Open refuses whatever verify refuses (pruning aside).
			if tc.want != "ok" && !strings.Contains(tc.name, "oldest") {
				if j, err := Open(path); err == nil {
					j.Close()
					t.Fatal("Open accepted a tampered set")
				}
			}
		})
	}
}

// TestPrunedSetNeedsAVouchingCheckpoint: a pruned set whose start no
// checkpoint covers is refused by the keyed verify and by Open with
// checkpoints, since its identity is then unknown.
func TestPrunedSetNeedsAVouchingCheckpoint(t *testing.T) {
	keyFile, v := ckKeys(t, "test")
	// Written without checkpoints, then pruned.
	path, files := rotatedJournal(t, 9, 3, "")
	os.Remove(files[0])
	if _, err := VerifyFile(path, AllowPruned()); err != nil {
		t.Fatalf("control (unkeyed, explicit pruning): %v", err)
	}
	os.WriteFile(CheckpointsPath(path), nil, 0o600)
	_, _, err := VerifySignedSet(path, v, nil, AllowPruned())
	wantCheckpointErr(t, err, CheckpointMissing)
	// A checkpoint that covers only pruned records vouches for nothing
	// that remains.
	key, err := loadSigner(keyFile, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	old := Checkpoint{Journal: Genesis, Seq: 2, Hash: Genesis, Time: time.Now()}
	msg, err := note.Sign(&note.Note{Text: old.text()}, key.signer)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(CheckpointsPath(path), msg, 0o600)
	_, _, err = VerifySignedSet(path, v, nil, AllowPruned())
	wantCheckpointErr(t, err, CheckpointMissing)
	if !strings.Contains(err.Error(), "nothing vouches") {
		t.Fatal(err)
	}
	_, err = Open(path, WithCheckpoints(Checkpoints{KeyFile: keyFile}))
	wantCheckpointErr(t, err, CheckpointMissing)

	// Control: written with checkpoints (one at each rotation), pruned,
	// reopened with checkpoints: it goes on naming the same journal.
	path, files = rotatedJournal(t, 9, 3, keyFile)
	os.Remove(files[0])
	os.Remove(files[1])
	j, err := Open(path, WithCheckpoints(Checkpoints{KeyFile: keyFile, Every: 1}))
	if err != nil {
		t.Fatal(err)
	}
	j.Append(context.Background(), rotRecord(1))
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	sum, rep, err := VerifySignedSet(path, v, nil, AllowPruned())
	if err != nil || sum.FirstSeq != 7 || rep.Start == nil || rep.Start.Seq != 6 || rep.Uncovered != 0 {
		t.Fatalf("%+v %+v %v", sum, rep, err)
	}
}

// TestCheckpointSignedAtEachRotation: the sealed segment's last record is
// signed before it is sealed.
func TestCheckpointSignedAtEachRotation(t *testing.T) {
	keyFile, v := ckKeys(t, "test")
	path, _ := rotatedJournal(t, 9, 3, keyFile)
	cps, _, err := readCheckpointFile(CheckpointsPath(path), v)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for _, c := range cps {
		seqs = append(seqs, c.Seq)
	}
	if fmt.Sprint(seqs) != "[3 6 9]" {
		t.Fatalf("checkpoints at %v, want one per rotation [3 6 9]", seqs)
	}
}

func TestShowAndExportAcrossSegments(t *testing.T) {
	path, files := rotatedJournal(t, 9, 3, "")
	var out bytes.Buffer
	if err := ShowFile(&out, path, Filter{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "9 of 9 records shown.") {
		t.Fatal(out.String())
	}
	// jsonl: the export of the set is one journal that verifies on its own.
	var exp bytes.Buffer
	sum, err := Export(&exp, path, FormatJSONL)
	if err != nil || sum.Records != 9 {
		t.Fatalf("%+v %v", sum, err)
	}
	if bytes.Contains(exp.Bytes(), []byte("hunter2")) {
		t.Fatal("a secret survived the export")
	}
	if got, err := Verify(bytes.NewReader(exp.Bytes())); err != nil || got.LastHash != sum.LastHash {
		t.Fatalf("export does not verify as one journal: %+v %v", got, err)
	}
	var all []byte
	for _, f := range files {
		b, _ := os.ReadFile(f)
		all = append(all, b...)
	}
	if !bytes.Equal(all, exp.Bytes()) {
		t.Fatal("the jsonl export is not the set's lines in order")
	}
	var ocsf bytes.Buffer
	if _, err := Export(&ocsf, path, FormatOCSF); err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(ocsf.Bytes(), []byte("\n")); n != 9 || bytes.Contains(ocsf.Bytes(), []byte("hunter2")) {
		t.Fatalf("%d events, or a secret in them", n)
	}
	// A damaged set exports nothing.
	os.Remove(files[1])
	exp.Reset()
	if _, err := Export(&exp, path, FormatJSONL); err == nil || exp.Len() != 0 {
		t.Fatalf("exported %d bytes of a set missing a segment (%v)", exp.Len(), err)
	}
	out.Reset()
	if err := ShowFile(&out, path, Filter{}); err == nil || !strings.Contains(out.String(), "JOURNAL NOT INTACT") {
		t.Fatalf("show of a damaged set: %v\n%s", err, out.String())
	}
}

// TestApprovalSealedBeforeItsOutcome: an approval in a sealed segment
// whose outcome never came is marked ambiguous on the next Open.
func TestApprovalSealedBeforeItsOutcome(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := Open(path, WithRotation(Rotation{MaxBytes: 1}))
	if err != nil {
		t.Fatal(err)
	}
	j.Append(context.Background(), Record{Call: "x", Tool: "rm", Decision: ClientAccepted})
	j.Append(context.Background(), Record{Tool: "rm", Decision: Refused})
	j.Close()
	if segs, _ := Segments(path); len(segs) != 2 {
		t.Fatalf("%d segments", len(segs))
	}
	j, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	sum, err := VerifyFile(path)
	if err != nil || sum.Ambiguous != 1 || sum.Unresolved != 0 {
		t.Fatalf("%+v %v", sum, err)
	}
}

// TestRotationFailures: a failed step leaves the journal writing on (the
// seal undone), and one that cannot be undone stops it; both sets verify.
func TestRotationFailures(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fail      map[string]bool
		wantSegs  int
		appendErr bool
	}{
		{"rename refused", map[string]bool{stepSeal: true}, 0, false},
		{"create fails, seal undone", map[string]bool{stepCreate: true}, 0, false},
		{"create fails, undo fails", map[string]bool{stepCreate: true, stepRollback: true}, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "j.jsonl")
			j, err := Open(path, WithRotation(Rotation{MaxBytes: 1}), func(o *options) {
				o.rotateStep = func(step string) error {
					if tc.fail[step] {
						return errors.New("injected at " + step)
					}
					return nil
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := j.Append(context.Background(), Record{Tool: "rm", Decision: Refused}); err != nil {
				t.Fatal(err)
			}
			err = j.Append(context.Background(), Record{Tool: "rm", Decision: Refused})
			if tc.appendErr != (err != nil) {
				t.Fatalf("second append: %v", err)
			}
			if j.Health() == nil {
				t.Fatal("a failed rotation is not reported by Health")
			}
			j.Close()
			segs, _ := Segments(path)
			if len(segs) != tc.wantSegs {
				t.Fatalf("%d segments, want %d", len(segs), tc.wantSegs)
			}
			if _, err := VerifyFile(path); err != nil {
				t.Fatal(err)
			}
			j, err = Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := j.Append(context.Background(), Record{Tool: "rm", Decision: Refused}); err != nil {
				t.Fatal(err)
			}
			j.Close()
			if _, err := VerifyFile(path); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCrashMidRotation kills a writer (a real process exit) at each step of
// a rotation; Open recovers every state and verify accepts the result.
func TestCrashMidRotation(t *testing.T) {
	for _, step := range []string{stepSeal, stepCreate, stepDone} {
		t.Run(step, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "j.jsonl")
			cmd := startChild(t, "rotate-die-at-"+step, path)
			err := cmd.Run()
			var ee interface{ ExitCode() int }
			if !errors.As(err, &ee) || ee.ExitCode() != 3 {
				t.Fatalf("child: %v", err)
			}
			if _, err := VerifyFile(path); err != nil {
				t.Fatalf("verify right after the crash: %v", err)
			}
			j, err := Open(path, WithRotation(Rotation{MaxBytes: 1}))
			if err != nil {
				t.Fatal(err)
			}
			if err := j.Append(context.Background(), Record{Tool: "rm", Decision: Refused}); err != nil {
				t.Fatal(err)
			}
			j.Close()
			sum, err := VerifyFile(path)
			if err != nil || sum.FirstSeq != 1 || sum.LastSeq != 3 {
				t.Fatalf("%+v %v", sum, err)
			}
		})
	}
}

// rotateCrashChild writes two records to a journal that rotates after each
// and exits at step of the first rotation.
func rotateCrashChild(step, path string) int {
	j, err := Open(path, WithRotation(Rotation{MaxBytes: 1}), func(o *options) {
		o.rotateStep = func(s string) error {
			if s == step {
				os.Exit(3)
			}
			return nil
		}
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	j.Append(context.Background(), Record{Call: "a", Tool: "rm", Decision: ClientAccepted})
	j.Append(context.Background(), Record{Call: "a", Tool: "rm", Decision: Executed})
	return 2 // not reached: the first rotation exits
}

// TestSecondWriterRefusedAfterRotation: the active file is a new file after
// a rotation; a second process still cannot open the journal.
func TestSecondWriterRefusedAfterRotation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "j.jsonl")
		j, err := Open(path, WithRotation(Rotation{MaxBytes: 1}))
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		j.Append(context.Background(), Record{Tool: "rm", Decision: Refused})
		// The writer seals the file after it has answered the append.
		synctest.Wait()
		if segs, err := Segments(path); len(segs) != 1 {
			t.Fatalf("%d segments (%v)", len(segs), err)
		}
		if j2, err := Open(path); !errors.Is(err, ErrInUse) {
			if err == nil {
				j2.Close()
			}
			t.Fatalf("second writer after rotation: %v", err)
		}
	})
}
