package witness

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// Every submission that is not a checkpoint signed by the journal's key and
// consistent with what the witness holds is refused, and changes nothing it
// holds; the legitimate submissions around them are taken.
func TestWitnessRefusesBadSubmissions(t *testing.T) {
	k := newKey(t, "audit.example")
	k2 := newKey(t, "other.example") // trusted too, for another journal
	// Same name as the trusted key, different key: a forgery.
	forger := newKey(t, "audit.example")
	f := newFixture(t, k.verifier, k2.verifier)
	id := hexHash("line 1 of the journal")
	h4, h6 := hexHash("line 4"), hexHash("line 6")
	bearer := "Bearer " + testToken

	// Control: seq 4 then seq 6 are stored; a repeat is accepted as held.
	for _, tc := range []struct {
		body   []byte
		status int
	}{
		{signCheckpoint(t, k.signer, id, 4, h4), http.StatusCreated},
		{signCheckpoint(t, k.signer, id, 6, h6), http.StatusCreated},
		{signCheckpoint(t, k.signer, id, 6, h6), http.StatusOK},
		{signCheckpoint(t, k.signer, id, 4, h4), http.StatusOK},
	} {
		if code, body := f.post(t, bearer, tc.body); code != tc.status {
			t.Fatalf("legitimate submission: %d %s", code, body)
		}
	}
	stored, err := os.ReadFile(f.w.checkpointsPath(id))
	must(t, err)

	twice, err := note.Sign(&note.Note{Text: checkpointText(id, 8, hexHash("line 8"))}, k.signer, k2.signer)
	must(t, err)
	unsigned := []byte(checkpointText(id, 8, hexHash("line 8")) + "\n")
	notCheckpoint, err := note.Sign(&note.Note{Text: "hello\n"}, k.signer)
	must(t, err)
	big := append(signCheckpoint(t, k.signer, id, 8, hexHash("line 8")), bytes.Repeat([]byte("x"), 5000)...)

	tests := []struct {
		name     string
		auth     string
		body     []byte
		status   int
		want     string
		evidence string // kind kept in ID.refused, "" when not kept
	}{
		{"no bearer token", "", signCheckpoint(t, k.signer, id, 8, hexHash("line 8")), http.StatusUnauthorized, "bearer token required", ""},
		{"wrong bearer token", "Bearer " + strings.Repeat("z", 40), signCheckpoint(t, k.signer, id, 8, hexHash("line 8")), http.StatusUnauthorized, "bearer token required", ""},
		{"token in the wrong scheme", "Basic " + testToken, signCheckpoint(t, k.signer, id, 8, hexHash("line 8")), http.StatusUnauthorized, "bearer token required", ""},
		{"forged: signed by another key of the same name", bearer, signCheckpoint(t, forger.signer, id, 8, hexHash("line 8")), http.StatusForbidden, "bad-signature", ""},
		{"unsigned", bearer, unsigned, http.StatusForbidden, "bad-signature", ""},
		{"signed by two keys", bearer, twice, http.StatusForbidden, "exactly one signature", ""},
		{"signed, not a checkpoint", bearer, notCheckpoint, http.StatusBadRequest, "malformed", ""},
		{"over the body cap", bearer, big, http.StatusRequestEntityTooLarge, "at most", ""},
		{"rollback: a seq below the latest", bearer, signCheckpoint(t, k.signer, id, 5, hexHash("line 5")), http.StatusConflict, "rollback", "rollback"},
		{"fork: another hash at the latest seq", bearer, signCheckpoint(t, k.signer, id, 6, hexHash("line 6, rewritten")), http.StatusConflict, "fork", "fork"},
		{"fork: another hash at an earlier seq", bearer, signCheckpoint(t, k.signer, id, 4, hexHash("line 4, rewritten")), http.StatusConflict, "fork", "fork"},
		// Refused and logged, but not kept in this journal's evidence,
		// where another key's notes would crowd out a real fork's.
		{"another trusted key for this journal", bearer, signCheckpoint(t, k2.signer, id, 8, hexHash("line 8")), http.StatusConflict, "other-key", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := f.post(t, tc.auth, tc.body)
			if code != tc.status {
				t.Fatalf("status %d, want %d: %s", code, tc.status, body)
			}
			contains(t, "answer", body, tc.want)
			after, err := os.ReadFile(f.w.checkpointsPath(id))
			must(t, err)
			if !bytes.Equal(after, stored) {
				t.Fatalf("a refused submission changed what the witness holds")
			}
			if tc.evidence != "" {
				ev, err := os.ReadFile(f.w.evidencePath(id))
				must(t, err)
				lines := strings.Split(strings.TrimSpace(string(ev)), "\n")
				last := lines[len(lines)-1]
				contains(t, "evidence", last, `"kind":"`+tc.evidence+`"`)
				// The signed note itself, so the refusal can be proved later.
				contains(t, "evidence", last, strings.Split(string(tc.body), "\n")[3])
				contains(t, "log", f.log.String(), "REFUSED")
			}
		})
	}
	if ev, _ := os.ReadFile(f.w.evidencePath(id)); bytes.Contains(ev, []byte(`"kind":"other-key"`)) {
		t.Fatalf("another key's note was kept in this journal's evidence: %s", ev)
	}
	contains(t, "log", f.log.String(), "signed by another key than the journal's")
	// What is held, read back over HTTP and checked with the public key:
	// the two checkpoints taken, nothing else.
	cps := f.held(t, id, k.verifier)
	if len(cps) != 2 || cps[0].Seq != 4 || cps[1].Seq != 6 || cps[1].Hash != h6 {
		t.Fatalf("held: %+v", cps)
	}
	// Control: the next checkpoint forward is still taken.
	if code, body := f.post(t, bearer, signCheckpoint(t, k.signer, id, 8, hexHash("line 8"))); code != http.StatusCreated {
		t.Fatalf("next checkpoint: %d %s", code, body)
	}
	// The other trusted key keeps its own journals.
	if code, body := f.post(t, bearer, signCheckpoint(t, k2.signer, hexHash("another journal"), 2, hexHash("x"))); code != http.StatusCreated {
		t.Fatalf("second key's journal: %d %s", code, body)
	}
	// Reading needs the token too.
	resp, err := http.Get(f.srv.URL + "/checkpoints/" + id)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unauthenticated read: %d", resp.StatusCode)
	}
}

func checkpointText(id string, seq uint64, head string) string {
	return "mcpsafe journal checkpoint v1\njournal " + id + "\nseq " + strconv.FormatUint(seq, 10) + "\nhead " + head + "\ntime 2026-05-01T12:00:00Z\n"
}

// What the witness took survives a restart, and so does its refusal to go
// back: the history is on disk, not only in memory. A checkpoint cut short
// by a crash mid-write is cut away; an edited file refuses to load.
func TestWitnessHistorySurvivesRestart(t *testing.T) {
	k := newKey(t, "audit.example")
	f := newFixture(t, k.verifier)
	id := hexHash("line 1")
	bearer := "Bearer " + testToken
	if code, body := f.post(t, bearer, signCheckpoint(t, k.signer, id, 6, hexHash("line 6"))); code != http.StatusCreated {
		t.Fatalf("%d %s", code, body)
	}
	must(t, f.w.Close())
	// A crash mid-write left half a note.
	half := signCheckpoint(t, k.signer, id, 8, hexHash("line 8"))
	fh, err := os.OpenFile(f.w.checkpointsPath(id), os.O_WRONLY|os.O_APPEND, 0o600)
	must(t, err)
	_, err = fh.Write(half[:len(half)/2])
	must(t, err)
	must(t, fh.Close())
	f.open(t, k.verifier)
	f.srv.Config.Handler = f.w.Handler()
	if code, body := f.post(t, bearer, signCheckpoint(t, k.signer, id, 4, hexHash("line 4"))); code != http.StatusConflict || !strings.Contains(body, "rollback") {
		t.Fatalf("rollback after a restart: %d %s", code, body)
	}
	if code, body := f.post(t, bearer, signCheckpoint(t, k.signer, id, 6, hexHash("line 6 rewritten"))); code != http.StatusConflict || !strings.Contains(body, "fork") {
		t.Fatalf("fork after a restart: %d %s", code, body)
	}
	if code, body := f.post(t, bearer, signCheckpoint(t, k.signer, id, 8, hexHash("line 8"))); code != http.StatusCreated {
		t.Fatalf("control after a restart: %d %s", code, body)
	}
	if cps := f.held(t, id, k.verifier); len(cps) != 2 || cps[1].Seq != 8 {
		t.Fatalf("held after restart: %+v", cps)
	}
	must(t, f.w.Close())

	// Someone with access to the witness's disk reorders its history.
	b, err := os.ReadFile(f.w.checkpointsPath(id))
	must(t, err)
	notes := splitNotes(b)
	must(t, os.WriteFile(f.w.checkpointsPath(id), append(notes[1], notes[0]...), 0o600))
	if _, err := Open(Config{Dir: f.dir, Keys: []note.Verifier{k.verifier}, Tokens: []string{testToken}}); err == nil || !strings.Contains(err.Error(), "does not follow") {
		t.Fatalf("an edited history loaded: %v", err)
	}
	// A witness without the key that signed a journal does not start
	// (it could no longer check what it holds).
	other := newKey(t, "other.example")
	must(t, os.WriteFile(f.w.checkpointsPath(id), b, 0o600))
	if _, err := Open(Config{Dir: f.dir, Keys: []note.Verifier{other.verifier}, Tokens: []string{testToken}}); err == nil || !strings.Contains(err.Error(), "trusted key") {
		t.Fatalf("loaded without the journal's key: %v", err)
	}
}

// TestWitnessCapsJournalsPerKey: one trusted key cannot start journals
// without end (each may hold MaxJournalBytes: together they would fill the
// disk, and every journal's writes would then fail). Its existing journals
// keep going, and another key's are not affected.
func TestWitnessCapsJournalsPerKey(t *testing.T) {
	a, b := newKey(t, "a.example"), newKey(t, "b.example")
	w, err := Open(Config{Dir: t.TempDir(), Keys: []note.Verifier{a.verifier, b.verifier}, Tokens: []string{testToken}, MaxJournalsPerKey: 2})
	must(t, err)
	defer w.Close()
	submit := func(k key, journal string, seq uint64) error {
		_, err := w.Submit(signCheckpoint(t, k.signer, hexHash(journal), seq, hexHash(journal+strconv.FormatUint(seq, 10))), "test")
		return err
	}
	must(t, submit(a, "a1", 1))
	must(t, submit(a, "a2", 1))
	var r *Refusal
	if err := submit(a, "a3", 1); !errors.As(err, &r) || r.Kind != RefusedTooMany || r.Status != http.StatusInsufficientStorage {
		t.Fatalf("a third journal of key a: %v", err)
	}
	if _, err := os.Stat(w.checkpointsPath(hexHash("a3"))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused journal got a file: %v", err)
	}
	// Controls: a's journals go on; b starts its own.
	must(t, submit(a, "a1", 2))
	must(t, submit(b, "b1", 1))
}
