package journal_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/journal"
	"golang.org/x/mod/sumdb/note"
)

// OpenCheckpoint is what a witness runs on every note POSTed to it: only a
// note signed by exactly one trusted key, and by nothing else, is parsed
// at all, and only a well-formed checkpoint is taken.
func TestOpenCheckpointTakesOnlyOneTrustedSignature(t *testing.T) {
	k := newCKKey(t, "audit.example")
	k2 := newCKKey(t, "second.example")
	stranger := newCKKey(t, "stranger.example")
	id, head := hexOf("journal-1"), hexOf("head-7")
	text := checkpointText(id, 7, head)
	cosigned := func(signers ...note.Signer) []byte {
		msg, err := note.Sign(&note.Note{Text: text}, signers...)
		if err != nil {
			t.Fatal(err)
		}
		return msg
	}
	for _, tc := range []struct {
		name string
		msg  []byte
		kind string
	}{
		{"signed by an untrusted key", signedNote(t, stranger.signer, text), journal.CheckpointBadSignature},
		{"co-signed by an untrusted key", cosigned(k.signer, stranger.signer), journal.CheckpointBadSignature},
		{"signed by two trusted keys", cosigned(k.signer, k2.signer), journal.CheckpointBadSignature},
		{"its text changed after signing", bytes.Replace(signedNote(t, k.signer, text), []byte("seq 7"), []byte("seq 9"), 1), journal.CheckpointBadSignature},
		{"over the size limit", append(signedNote(t, k.signer, text), bytes.Repeat([]byte("\n"), journal.MaxCheckpointNote)...), journal.CheckpointMalformed},
		{"another header", signedNote(t, k.signer, strings.Replace(text, "checkpoint v1", "checkpoint v2", 1)), journal.CheckpointMalformed},
		{"seq 0", signedNote(t, k.signer, checkpointText(id, 0, head)), journal.CheckpointMalformed},
		{"a seq that is not a number", signedNote(t, k.signer, strings.Replace(text, "seq 7", "seq 7e3", 1)), journal.CheckpointMalformed},
		{"a short head", signedNote(t, k.signer, checkpointText(id, 7, head[:40])), journal.CheckpointMalformed},
		{"an upper-case journal id", signedNote(t, k.signer, checkpointText(strings.ToUpper(id), 7, head)), journal.CheckpointMalformed},
		{"a field missing", signedNote(t, k.signer, strings.Replace(text, "head ", "hash ", 1)), journal.CheckpointMalformed},
		{"an empty field", signedNote(t, k.signer, strings.Replace(text, "seq 7", "seq ", 1)), journal.CheckpointMalformed},
		{"a journal line misnamed", signedNote(t, k.signer, strings.Replace(text, "journal ", "journ ", 1)), journal.CheckpointMalformed},
		{"a time line misnamed", signedNote(t, k.signer, strings.Replace(text, "time ", "when ", 1)), journal.CheckpointMalformed},
		{"a time that is not one", signedNote(t, k.signer, strings.Replace(text, "2026-05-01", "2026-13-01", 1)), journal.CheckpointMalformed},
		{"an extra line", signedNote(t, k.signer, text+"approved-by mallory\n"), journal.CheckpointMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := journal.OpenCheckpoint(tc.msg, k.verifier, k2.verifier)
			if err == nil {
				t.Fatalf("taken: %+v", c)
			}
			wantKind(t, err, tc.kind)
		})
	}
	for _, s := range []note.Signer{k.signer, k2.signer} {
		c, err := journal.OpenCheckpoint(signedNote(t, s, text), k.verifier, k2.verifier)
		if err != nil || c.Key != s.Name() || c.Journal != id || c.Seq != 7 || c.Hash != head ||
			!c.Time.Equal(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)) {
			t.Fatalf("control, signed by %s: %+v %v", s.Name(), c, err)
		}
	}
}

// The witness's bearer token is read from a file private to its owner,
// one token on one line; anything else refuses to open the journal
// rather than running without the witness asked for.
func TestWitnessTokenFileMustBePrivateAndHoldOneToken(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "none"), "no such file"},
		{"readable by others", write("open", witnessToken+"\n", 0o644), "chmod 600"},
		{"readable by the group", write("group", witnessToken+"\n", 0o640), "chmod 600"},
		{"empty", write("empty", "\n\n", 0o600), "one token on one line"},
		{"two tokens", write("two", witnessToken+"\n"+witnessToken+"-2\n", 0o600), "one token on one line"},
		{"a token with a space", write("space", "abc def\n", 0o600), "one token on one line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tok, err := journal.LoadWitnessToken(tc.path); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("LoadWitnessToken: %q %v, want %q", tok, err, tc.want)
			}
		})
	}
	if tok, err := journal.LoadWitnessToken(write("good", "  "+witnessToken+"\n", 0o600)); err != nil || tok != witnessToken {
		t.Fatalf("control: %q %v", tok, err)
	}
}

// A journal asked to use a witness it cannot use safely does not open,
// and leaves nothing locked: the same path opens once the configuration
// is fixed.
func TestJournalWithAnUnusableWitnessDoesNotOpen(t *testing.T) {
	k := newCKKey(t, "audit.example")
	dir := t.TempDir()
	good := filepath.Join(dir, "token")
	if err := os.WriteFile(good, []byte(witnessToken), 0o600); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dir, "token-open")
	if err := os.WriteFile(open, []byte(witnessToken), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "j.jsonl")
	for _, tc := range []struct{ name, url, tok, want string }{
		{"http to another machine", "http://witness.example:8444", good, "use https://"},
		{"no token file", "https://witness.example", "", "needs a token file"},
		{"a token file others can read", "https://witness.example", open, "chmod 600"},
		{"a token file without a URL", "", good, "without a witness URL"},
		{"a query in the URL", "https://witness.example/?t=1", good, "no query"},
	} {
		_, err := journal.Open(path, journal.WithCheckpoints(journal.Checkpoints{KeyFile: k.file, WitnessURL: tc.url, WitnessTokenFile: tc.tok}))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	j, err := journal.Open(path, journal.WithCheckpoints(journal.Checkpoints{KeyFile: k.file, WitnessURL: "https://witness.example", WitnessTokenFile: good}))
	if err != nil {
		t.Fatalf("control: %v", err)
	}
	if err := j.Close(); err != nil && !errors.Is(err, journal.ErrClosed) {
		t.Fatalf("closing the empty journal: %v", err)
	}
}

// A journal's id is the hash of its first complete line, the one its
// checkpoints name; a journal without one has none yet ("").
func TestJournalIDIsItsFirstLinesHash(t *testing.T) {
	dir := t.TempDir()
	k := newCKKey(t, "audit.example")
	path := filepath.Join(dir, "j.jsonl")
	writeSigned(t, path, journal.Checkpoints{KeyFile: k.file, Every: 2}, calls())
	id, err := journal.JournalID(path)
	if err != nil {
		t.Fatal(err)
	}
	_, rep, err := journal.VerifySigned(path, k.verifier)
	if err != nil || rep.Latest.Journal != id {
		t.Fatalf("the checkpoints name %s, JournalID says %s (%v)", rep.Latest.Journal, id, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := bytes.Cut(b, []byte("\n"))
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"empty", nil},
		{"a first line cut short", first[:len(first)/2]},
		{"a first line over the limit", bytes.Repeat([]byte("x"), journal.MaxLineBytes+10)},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".jsonl")
		if err := os.WriteFile(p, tc.body, 0o600); err != nil {
			t.Fatal(err)
		}
		if got, err := journal.JournalID(p); err != nil || got != "" {
			t.Errorf("%s: %q %v", tc.name, got, err)
		}
	}
	if _, err := journal.JournalID(filepath.Join(dir, "none.jsonl")); err == nil {
		t.Error("a missing journal has an id")
	}
}
