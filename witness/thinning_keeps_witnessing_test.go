package witness

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/journal"
)

// A journal whose checkpoints reach the witness's per-journal limit stays
// witnessed: the witness thins the older half of what it holds and takes
// the new checkpoint (before, the limit was permanent: a busy server
// filled it in days and was then witnessed no further). What it keeps
// still refuses a journal cut back or rewritten behind its latest
// checkpoint, and a submission that goes back or forks (the controls).
func TestWitnessPastItsLimitKeepsWitnessing(t *testing.T) {
	k := newKey(t, "audit.example")
	// About a dozen notes fit.
	f := newLimitedFixture(t, 4096, k.verifier)
	path := filepath.Join(t.TempDir(), "state", "journal.jsonl")
	c := journal.Checkpoints{KeyFile: k.signerFile, Every: 1, Interval: time.Hour, WitnessURL: f.srv.URL, WitnessTokenFile: f.tokFile}
	var recs []journal.Record
	for range 10 {
		recs = append(recs, records()...)
	}
	// Written in batches that the sender's queue (64) never overflows.
	for i := 0; i < len(recs); i += 20 {
		if err := writeJournal(t, path, c, recs[i:i+20]); err != nil {
			t.Fatalf("records %d..%d: the witness did not take the checkpoints: %v\n%s", i+1, i+20, err, f.log)
		}
	}
	id, err := journal.JournalID(path)
	must(t, err)
	held := f.held(t, id, k.verifier)
	if n := len(held); n == 0 || held[n-1].Seq != 60 || held[0].Seq != 1 || n >= 30 {
		t.Fatalf("the witness holds %d checkpoints, seq %d..%d; want a thinned history from seq 1 to 60", n, held[0].Seq, held[n-1].Seq)
	}
	list := f.w.List()
	if len(list) != 1 || list[0].Thinned == 0 || list[0].LatestSeq != 60 {
		t.Fatalf("the list does not show the thinning: %+v", list)
	}
	contains(t, "log", f.log.String(), "thinned its older half")
	wc := &journal.WitnessClient{URL: f.srv.URL, Token: testToken}
	sum, _, wr, err := journal.VerifyWitnessed(context.Background(), path, k.verifier, wc, nil)
	if err != nil || sum.Records != 60 || wr.Latest.Seq != 60 || wr.Thinned != list[0].Thinned {
		t.Fatalf("control: the journal does not verify against the thinned witness: %+v %+v %v", sum, wr, err)
	}
	contains(t, "verify's report", wr.String(), "the witness thinned")
	// The thinned file is what a restarted witness loads.
	f.w.Close()
	f.open(t, k.verifier)
	f.srv.Config.Handler = f.w.Handler()
	if got := f.held(t, id, k.verifier); len(got) != len(held) {
		t.Fatalf("after a restart the witness holds %d checkpoints, before %d", len(got), len(held))
	}

	// Submissions that go back are refused: below the latest at a seq
	// the witness still holds or one it thinned, or another head at the
	// latest.
	bearer := "Bearer " + testToken
	thinnedSeq := uint64(0)
	kept := map[uint64]bool{}
	for _, c := range held {
		kept[c.Seq] = true
	}
	for s := uint64(2); s < 60; s++ {
		if !kept[s] {
			thinnedSeq = s
			break
		}
	}
	for name, body := range map[string][]byte{
		"fork at the latest seq":  signCheckpoint(t, k.signer, id, 60, hexHash("line 60, rewritten")),
		"fork at a kept seq":      signCheckpoint(t, k.signer, id, held[len(held)-2].Seq, hexHash("rewritten")),
		"rollback to a kept seq":  signCheckpoint(t, k.signer, id, 1, hexHash("rewritten")),
		"back to a thinned seq":   signCheckpoint(t, k.signer, id, thinnedSeq, hexHash("rewritten")),
		"the first seq once more": signCheckpoint(t, k.signer, id, 1, held[0].Hash),
	} {
		code, body := f.post(t, bearer, body)
		want := http.StatusConflict
		if name == "the first seq once more" {
			want = http.StatusOK // control: a kept head again is already held
		}
		if code != want {
			t.Errorf("%s: %d %s, want %d", name, code, body, want)
		}
	}

	// A journal cut back behind the latest witnessed checkpoint fails.
	orig, err := os.ReadFile(path)
	must(t, err)
	lines := bytes.SplitAfter(orig, []byte("\n"))
	must(t, os.WriteFile(path, bytes.Join(lines[:55], nil), 0o600))
	must(t, os.Remove(path+journal.HeadSuffix))
	must(t, os.Remove(journal.CheckpointsPath(path)))
	_, _, _, err = journal.VerifyWitnessed(context.Background(), path, k.verifier, wc, nil)
	var ce *journal.CheckpointError
	if !errors.As(err, &ce) || ce.Kind != journal.CheckpointTruncated {
		t.Fatalf("a journal cut back to seq 55 against a witness at seq 60: %v", err)
	}
	// One rewritten near its end, re-signed by a restarted server: the
	// witness refuses the head as a fork, and verify fails.
	edited := bytes.Replace(orig, []byte(`"summary":"delete /srv/c3.txt"`), []byte(`"summary":"delete /srv/c9.txt"`), 20)
	must(t, os.WriteFile(path, rechain(edited), 0o600))
	if err := writeJournal(t, path, c, nil); err == nil || !strings.Contains(err.Error(), "fork") {
		t.Fatalf("the witness took the rewritten head: %v", err)
	}
	_, _, _, err = journal.VerifyWitnessed(context.Background(), path, k.verifier, wc, nil)
	if !errors.As(err, &ce) || ce.Kind != journal.CheckpointRewritten {
		t.Fatalf("a rewritten journal against the thinned witness: %v", err)
	}
}
