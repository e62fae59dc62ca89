package journal_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/journal"
	"golang.org/x/mod/sumdb/note"
)

// The witness is trusted to keep checkpoints, not to produce them: what it
// answers is checked as if it lied. Each handler here is a witness that
// lies, or fails, in one way; the control is the same client reading the
// truth.

func signedNote(t *testing.T, s note.Signer, text string) []byte {
	t.Helper()
	msg, err := note.Sign(&note.Note{Text: text}, s)
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

func checkpointText(id string, seq uint64, head string) string {
	return fmt.Sprintf("mcpsafe journal checkpoint v1\njournal %s\nseq %d\nhead %s\ntime %s\n",
		id, seq, head, time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC).Format(time.RFC3339Nano))
}

func hexOf(s string) string { return fmt.Sprintf("%064x", []byte(s))[:64] }

// lyingWitness serves body for GET /checkpoints/{id} and list for GET
// /checkpoints, with the given statuses.
type lyingWitness struct {
	srv                 *httptest.Server
	notes, list         []byte
	notesCode, listCode int
	location            string // a redirect target, with a 3xx code
}

func newLyingWitness(t *testing.T, lw *lyingWitness) *lyingWitness {
	t.Helper()
	if lw.notesCode == 0 {
		lw.notesCode = http.StatusOK
	}
	if lw.listCode == 0 {
		lw.listCode = http.StatusOK
	}
	lw.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+witnessToken {
			http.Error(w, "bearer token required", http.StatusUnauthorized)
			return
		}
		if lw.location != "" {
			w.Header().Set("Location", lw.location)
		}
		if r.URL.Path == journal.WitnessCheckpointsPath {
			w.WriteHeader(lw.listCode)
			w.Write(lw.list)
			return
		}
		w.WriteHeader(lw.notesCode)
		w.Write(lw.notes)
	}))
	t.Cleanup(lw.srv.Close)
	return lw
}

func (lw *lyingWitness) client() *journal.WitnessClient {
	return &journal.WitnessClient{URL: lw.srv.URL, Token: witnessToken}
}

func TestWitnessAnswersAreCheckedNotTrusted(t *testing.T) {
	k := newCKKey(t, "audit.example")
	mallory := newCKKey(t, "audit.example") // same name, another key
	id, other := hexOf("journal-1"), hexOf("journal-2")
	good := append(signedNote(t, k.signer, checkpointText(id, 2, hexOf("h2"))), signedNote(t, k.signer, checkpointText(id, 4, hexOf("h4")))...)
	honest := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(good) }))
	defer honest.Close()
	var followed atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { followed.Add(1); w.Write(good) }))
	defer elsewhere.Close()

	for _, tc := range []struct {
		name string
		lw   lyingWitness
		kind string // a CheckpointError's kind, or "" for a plain error
		want string
	}{
		{"a checkpoint of another journal", lyingWitness{notes: append(append([]byte{}, good...), signedNote(t, k.signer, checkpointText(other, 6, hexOf("h6")))...)},
			journal.CheckpointOtherJournal, "answered a checkpoint of journal " + other + " when asked for " + id},
		{"a checkpoint signed by another key of the same name", lyingWitness{notes: signedNote(t, mallory.signer, checkpointText(id, 6, hexOf("h6")))},
			journal.CheckpointBadSignature, ""},
		{"a checkpoint cut short", lyingWitness{notes: good[:len(good)-10]},
			journal.CheckpointMalformed, "answered a checkpoint cut short"},
		{"a signed note that is not a checkpoint", lyingWitness{notes: signedNote(t, k.signer, "all is well\n")},
			journal.CheckpointMalformed, "not an mcpsafe journal checkpoint"},
		{"an answer over 64 MiB", lyingWitness{notes: bytes.Repeat([]byte("x"), 64<<20+1)},
			"", "answer over 67108864 bytes"},
		{"an error page of 100 KiB", lyingWitness{notesCode: http.StatusInternalServerError, notes: bytes.Repeat([]byte("e"), 100<<10)},
			"", "answered 500 Internal Server Error: eeee"},
		{"a redirect to another server", lyingWitness{notesCode: http.StatusFound, location: elsewhere.URL + "/checkpoints/" + id},
			"", "answered 302 Found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lw := newLyingWitness(t, &tc.lw)
			cps, err := lw.client().Checkpoints(context.Background(), id, k.verifier)
			if err == nil {
				t.Fatalf("taken: %+v", cps)
			}
			if tc.kind != "" {
				wantKind(t, err, tc.kind)
			}
			wantIn(t, "error", err.Error(), tc.want)
			if len(err.Error()) > 1024 {
				t.Fatalf("the witness's answer copied whole into the error: %d bytes", len(err.Error()))
			}
		})
	}
	if n := followed.Load(); n != 0 {
		t.Fatalf("the client followed the redirect (%d requests elsewhere, with the token)", n)
	}

	// Control: the same client, the truth.
	cps, err := (&journal.WitnessClient{URL: honest.URL, Token: witnessToken}).Checkpoints(context.Background(), id, k.verifier)
	if err != nil || len(cps) != 2 || cps[1].Seq != 4 || cps[1].Journal != id || cps[1].Key != "audit.example" {
		t.Fatalf("control: %+v %v", cps, err)
	}
}

// The list of journals is unsigned; a list that cannot be read fails the
// call (and a verify that needs it) rather than reporting no others.
func TestWitnessListThatCannotBeReadFails(t *testing.T) {
	for _, tc := range []struct {
		name string
		lw   lyingWitness
		want string
	}{
		{"not JSON", lyingWitness{list: []byte(`<html>maintenance</html>`)}, "list: invalid character"},
		{"an error", lyingWitness{listCode: http.StatusBadGateway}, "answered 502 Bad Gateway"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lw := newLyingWitness(t, &tc.lw)
			_, err := lw.client().Journals(context.Background())
			wantIn(t, "Journals", errString(err), tc.want)
		})
	}
	lw := newLyingWitness(t, &lyingWitness{list: []byte(`{"journals":[{"journal":"` + hexOf("j") + `","key":"audit.example","latest_seq":9,"refused":2,"thinned":1}]}`)})
	list, err := lw.client().Journals(context.Background())
	if err != nil || len(list) != 1 || list[0].LatestSeq != 9 || list[0].Refused != 2 || list[0].Thinned != 1 {
		t.Fatalf("control: %+v %v", list, err)
	}
}

// A verify whose witness holds the journal's checkpoints but cannot list
// what else it holds fails: a replaced journal would otherwise pass
// unnoticed.
func TestVerifyFailsWhenTheWitnessCannotSayWhatElseItHolds(t *testing.T) {
	k := newCKKey(t, "audit.example")
	f := newWitnessFixture(t, k.verifier)
	path := filepath.Join(t.TempDir(), "j.jsonl")
	writeWitnessed(t, f, k, path, calls())
	id, err := journal.JournalID(path)
	if err != nil {
		t.Fatal(err)
	}
	notes, err := f.w.Notes(id)
	if err != nil {
		t.Fatal(err)
	}
	lw := newLyingWitness(t, &lyingWitness{notes: notes, listCode: http.StatusServiceUnavailable})
	sum, _, wr, err := journal.VerifyWitnessed(context.Background(), path, k.verifier, lw.client(), nil)
	wantIn(t, "VerifyWitnessed", errString(err), "answered 503")
	if sum.Records != 6 || wr.Checkpoints != 3 {
		t.Fatalf("what was checked before the list: %+v %+v", sum, wr)
	}
	// Control: the real witness lists.
	if _, _, _, err := journal.VerifyWitnessed(context.Background(), path, k.verifier, f.client(), nil); err != nil {
		t.Fatalf("control: %v", err)
	}
}

// A witness that cannot be reached, or that does not know the token,
// fails verify with the witness named; nothing is taken as "no
// checkpoints".
func TestUnreachableOrUnauthorizedWitnessFailsVerify(t *testing.T) {
	k := newCKKey(t, "audit.example")
	f := newWitnessFixture(t, k.verifier)
	path := filepath.Join(t.TempDir(), "j.jsonl")
	writeWitnessed(t, f, k, path, calls())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String()
	l.Close()
	for _, tc := range []struct {
		name string
		wc   *journal.WitnessClient
		want string
	}{
		{"down", &journal.WitnessClient{URL: down, Token: witnessToken}, "journal: witness " + down + ": "},
		{"a wrong token", &journal.WitnessClient{URL: f.srv.URL, Token: "guessed"}, "answered 401 Unauthorized"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, _, err := journal.VerifyWitnessed(context.Background(), path, k.verifier, tc.wc, nil)
			wantIn(t, "VerifyWitnessed", errString(err), tc.want)
			if _, err := tc.wc.Journals(context.Background()); err == nil {
				t.Fatal("Journals answered")
			}
		})
	}
}

// countingTransport records the requests a client would have sent.
type countingTransport struct{ n atomic.Int32 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r, Header: http.Header{}}, nil
}

// The bearer token never leaves in clear for another machine, and never
// goes to an address that hides part of itself: such a witness URL is
// refused before any request, as is a journal id that is not one (it is
// put in the path). Controls: https anywhere, http to this host.
func TestWitnessURLRefusedBeforeTheTokenIsSent(t *testing.T) {
	id := hexOf("journal-1")
	k := newCKKey(t, "audit.example")
	for _, tc := range []struct {
		url, id string
		ok      bool
	}{
		{"http://witness.example:8444", id, false},
		{"http://10.0.0.7", id, false},
		{"ftp://witness.example", id, false},
		{"https://", id, false},
		{"https://witness.example/?tenant=1", id, false},
		{"https://witness.example/#x", id, false},
		{"https://user:pass@witness.example", id, false},
		{"http://[::1", id, false},
		{"https://witness.example", "../../etc/passwd", false},
		{"https://witness.example", strings.ToUpper(id), false},
		{"https://witness.example", id[:63], false},
		{"https://witness.example", id, true},
		{"http://localhost:8444", id, true},
		{"http://127.0.0.1:8444", id, true},
		{"http://[::1]:8444", id, true},
	} {
		ct := &countingTransport{}
		wc := &journal.WitnessClient{URL: tc.url, Token: witnessToken, HTTP: &http.Client{Transport: ct}}
		_, err := wc.Checkpoints(context.Background(), tc.id, k.verifier)
		if tc.ok != (err == nil) || tc.ok != (ct.n.Load() == 1) {
			t.Errorf("Checkpoints(%q, %q): %v after %d request(s)", tc.url, tc.id, err, ct.n.Load())
		}
		if tc.id != id {
			continue
		}
		ct.n.Store(0)
		_, err = wc.Journals(context.Background())
		if ok := err == nil || !strings.Contains(err.Error(), "witness URL"); tc.ok != ok || tc.ok != (ct.n.Load() == 1) {
			t.Errorf("Journals(%q): %v after %d request(s)", tc.url, err, ct.n.Load())
		}
	}
}
