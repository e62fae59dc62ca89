package journal_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/witness"
	"golang.org/x/mod/sumdb/note"
)

// The tests of the journal's witness client run it against the real
// witness (package witness) served over loopback HTTP. Failures a real
// witness does not produce on demand (down, overloaded, a status the
// client must not retry) are put in front of it by the fixture, and the
// lies a compromised witness could tell are served by handlers of their
// own (witness_that_lies_test.go).

const witnessToken = "0123456789abcdef0123456789abcdef-journal-tests"

// ckKey is a checkpoint key pair: the signer file a journal is opened
// with (mode 0600, away from any journal) and both halves loaded.
type ckKey struct {
	file     string
	signer   note.Signer
	verifier note.Verifier
}

func newCKKey(t *testing.T, name string) ckKey {
	t.Helper()
	skey, vkey, err := journal.GenerateCheckpointKey(name)
	if err != nil {
		t.Fatal(err)
	}
	k := ckKey{file: filepath.Join(t.TempDir(), "checkpoint.key")}
	if err := os.WriteFile(k.file, []byte(skey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if k.signer, err = note.NewSigner(skey); err != nil {
		t.Fatal(err)
	}
	if k.verifier, err = note.NewVerifier(vkey); err != nil {
		t.Fatal(err)
	}
	return k
}

// witnessFixture is a real witness on loopback. While status is set, the
// fixture answers every POST with it instead (the witness is "down").
type witnessFixture struct {
	w       *witness.Server
	srv     *httptest.Server
	tokFile string

	status atomic.Int32 // 0: the witness answers

	mu    sync.Mutex
	posts []post // every POST, answered or not
}

type post struct {
	auth   string
	seq    uint64 // of the note, checked with the key; 0 if it does not open
	status int
}

func newWitnessFixture(t *testing.T, keys ...note.Verifier) *witnessFixture {
	t.Helper()
	return newWitnessFixtureWith(t, witness.Config{}, keys...)
}

// newWitnessFixtureWith is newWitnessFixture with the witness's limits
// taken from cfg.
func newWitnessFixtureWith(t *testing.T, cfg witness.Config, keys ...note.Verifier) *witnessFixture {
	t.Helper()
	cfg.Dir, cfg.Keys, cfg.Tokens, cfg.Logger = filepath.Join(t.TempDir(), "witness"), keys, []string{witnessToken}, slog.New(slog.DiscardHandler)
	w, err := witness.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := &witnessFixture{w: w, tokFile: filepath.Join(t.TempDir(), "witness.token")}
	if err := os.WriteFile(f.tokFile, []byte(witnessToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	real := w.Handler()
	f.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		// No connection outlives its request: a client in a synctest
		// bubble must not keep a goroutine blocked on a socket.
		rw.Header().Set("Connection", "close")
		if r.Method != http.MethodPost {
			real.ServeHTTP(rw, r)
			return
		}
		var body bytes.Buffer
		body.ReadFrom(r.Body)
		r.Body.Close()
		p := post{auth: r.Header.Get("Authorization")}
		if c, err := journal.OpenCheckpoint(body.Bytes(), keys...); err == nil {
			p.seq = c.Seq
		}
		rec := httptest.NewRecorder()
		if st := int(f.status.Load()); st != 0 {
			http.Error(rec, fmt.Sprintf("witness answering %d", st), st)
		} else {
			r.Body = io.NopCloser(&body)
			real.ServeHTTP(rec, r)
		}
		p.status = rec.Code
		f.mu.Lock()
		f.posts = append(f.posts, p)
		f.mu.Unlock()
		for k, v := range rec.Header() {
			rw.Header()[k] = v
		}
		rw.WriteHeader(rec.Code)
		rw.Write(rec.Body.Bytes())
	}))
	t.Cleanup(func() {
		f.srv.Close()
		w.Close()
	})
	return f
}

func (f *witnessFixture) received() []post {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]post(nil), f.posts...)
}

// checkpoints is what the journal at path asked the witness to hold, with
// the settings the tests share: a checkpoint every 2 records, none by time,
// and a Close that waits up to a minute for the witness (on a loaded
// machine its fsyncs can take seconds; the tests of the bound itself set
// their own).
func (f *witnessFixture) checkpoints(k ckKey, logTo *bytes.Buffer) journal.Checkpoints {
	c := journal.Checkpoints{KeyFile: k.file, Every: 2, Interval: 1 << 62, WitnessURL: f.srv.URL, WitnessTokenFile: f.tokFile,
		WitnessCloseWait: time.Minute, Logger: slog.New(slog.DiscardHandler)}
	if logTo != nil {
		c.Logger = slog.New(slog.NewTextHandler(logTo, nil))
	}
	return c
}

// calls are three approved calls and their outcomes: six records.
func calls() []journal.Record {
	var out []journal.Record
	for i, d := range []string{journal.ClientAccepted, journal.TokenRedeemed, journal.ChannelApproved} {
		call := fmt.Sprintf("c%d", i+1)
		a := journal.Record{Call: call, Tool: "delete_file", Principal: "alice@example.com", ArgsDigest: "sha256:" + call,
			Summary: "delete /srv/" + call + ".txt", By: "gate", Decision: d}
		o := a
		o.Decision = journal.Executed
		out = append(out, a, o)
	}
	return out
}

// client reads the fixture's witness as `journal verify --witness-url`
// does.
func (f *witnessFixture) client() *journal.WitnessClient {
	return &journal.WitnessClient{URL: f.srv.URL, Token: witnessToken}
}

// writeWitnessed writes recs to a new journal at path, its checkpoints
// sent to f, and closes it.
func writeWitnessed(t *testing.T, f *witnessFixture, k ckKey, path string, recs []journal.Record) {
	t.Helper()
	writeSigned(t, path, f.checkpoints(k, nil), recs)
}

// writeSigned writes recs to the journal at path opened with c, and
// closes it.
func writeSigned(t *testing.T, path string, c journal.Checkpoints, recs []journal.Record) {
	t.Helper()
	j, err := journal.Open(path, journal.WithCheckpoints(c))
	if err != nil {
		t.Fatal(err)
	}
	appendAll(t, j, recs)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
}

func appendAll(t *testing.T, j *journal.Journal, recs []journal.Record) {
	t.Helper()
	for _, r := range recs {
		if err := j.Append(context.Background(), r); err != nil {
			t.Fatalf("a record refused: %v", err)
		}
	}
}

func wantIn(t *testing.T, what, s string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Fatalf("%s: want %q in:\n%s", what, w, s)
		}
	}
}
