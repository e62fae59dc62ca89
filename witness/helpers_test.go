package witness

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/journal"
	"golang.org/x/mod/sumdb/note"
)

// key is one checkpoint key pair: the signer file a journal uses, the
// public key file and both loaded.
type key struct {
	signerFile, pubFile string
	signer              note.Signer
	verifier            note.Verifier
}

func newKey(t *testing.T, name string) key {
	t.Helper()
	skey, vkey, err := journal.GenerateCheckpointKey(name)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	k := key{signerFile: filepath.Join(dir, "ck.key"), pubFile: filepath.Join(dir, "ck.pub")}
	must(t, os.WriteFile(k.signerFile, []byte(skey+"\n"), 0o600))
	must(t, os.WriteFile(k.pubFile, []byte(vkey+"\n"), 0o644))
	if k.signer, err = note.NewSigner(skey); err != nil {
		t.Fatal(err)
	}
	if k.verifier, err = note.NewVerifier(vkey); err != nil {
		t.Fatal(err)
	}
	return k
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

const testToken = "0123456789abcdef0123456789abcdef-submitter"

// fixture is a witness served over real HTTP on loopback.
type fixture struct {
	dir     string
	w       *Server
	srv     *httptest.Server
	tokFile string // testToken, mode 0600
	log     *bytes.Buffer
	limit   int64 // Config.MaxJournalBytes (0: the default)
}

func newFixture(t *testing.T, keys ...note.Verifier) *fixture {
	t.Helper()
	return newLimitedFixture(t, 0, keys...)
}

// newLimitedFixture is newFixture with MaxJournalBytes set to limit.
func newLimitedFixture(t *testing.T, limit int64, keys ...note.Verifier) *fixture {
	t.Helper()
	f := &fixture{dir: filepath.Join(t.TempDir(), "witness"), log: &bytes.Buffer{}, limit: limit}
	f.tokFile = filepath.Join(t.TempDir(), "token")
	must(t, os.WriteFile(f.tokFile, []byte(testToken+"\n"), 0o600))
	f.open(t, keys...)
	f.srv = httptest.NewServer(f.w.Handler())
	t.Cleanup(func() {
		f.srv.Close()
		f.w.Close()
	})
	return f
}

func (f *fixture) open(t *testing.T, keys ...note.Verifier) {
	t.Helper()
	w, err := Open(Config{Dir: f.dir, Keys: keys, Tokens: []string{testToken}, Logger: slog.New(slog.NewTextHandler(f.log, nil)), MaxJournalBytes: f.limit})
	if err != nil {
		t.Fatal(err)
	}
	f.w = w
}

// post sends body to the witness with the given Authorization header
// value ("" for none).
func (f *fixture) post(t *testing.T, auth string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+journal.WitnessCheckpointsPath, bytes.NewReader(body))
	must(t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// held fetches the notes the witness holds for id, over HTTP.
func (f *fixture) held(t *testing.T, id string, k note.Verifier) []journal.Checkpoint {
	t.Helper()
	wc := &journal.WitnessClient{URL: f.srv.URL, Token: testToken}
	cps, err := wc.Checkpoints(context.Background(), id, k)
	must(t, err)
	return cps
}

// signCheckpoint signs a checkpoint of journal id by hand, in the format
// package journal writes (the test vector of that format).
func signCheckpoint(t *testing.T, s note.Signer, id string, seq uint64, head string) []byte {
	t.Helper()
	text := fmt.Sprintf("mcpsafe journal checkpoint v1\njournal %s\nseq %d\nhead %s\ntime %s\n",
		id, seq, head, time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC).Format(time.RFC3339Nano))
	msg, err := note.Sign(&note.Note{Text: text}, s)
	must(t, err)
	return msg
}

func hexHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// records are three approved calls, each with its outcome.
func records() []journal.Record {
	var out []journal.Record
	for i, d := range []string{journal.ClientAccepted, journal.TokenRedeemed, journal.ChannelApproved} {
		call := fmt.Sprintf("c%d", i+1)
		base := journal.Record{Call: call, Tool: "delete_file", Principal: "alice@example.com", ArgsDigest: "sha256:" + call,
			Summary: "delete /srv/" + call + ".txt", By: "gate"}
		a, o := base, base
		a.Decision, o.Decision = d, journal.Executed
		out = append(out, a, o)
	}
	return out
}

// writeJournal appends recs to the journal at path, opened with c, and
// returns Close's error.
func writeJournal(t *testing.T, path string, c journal.Checkpoints, recs []journal.Record) error {
	t.Helper()
	j, err := journal.Open(path, journal.WithCheckpoints(c))
	must(t, err)
	for _, r := range recs {
		must(t, j.Append(context.Background(), r))
	}
	return j.Close()
}

// rechain recomputes every prev after an edit, keeping the rest of each
// line byte for byte: what an attacker with write access does.
func rechain(b []byte) []byte {
	prevField := regexp.MustCompile(`"prev":"[0-9a-f]{64}"`)
	prev := journal.Genesis
	var out []byte
	for _, l := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		l = prevField.ReplaceAll(l, []byte(`"prev":"`+prev+`"`))
		prev = hexHash(string(l))
		out = append(append(out, l...), '\n')
	}
	return out
}

func contains(t *testing.T, what, s, want string) {
	t.Helper()
	if !strings.Contains(s, want) {
		t.Fatalf("%s: want %q in:\n%s", what, want, s)
	}
}
