package journal

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// A hash chain alone proves nothing to someone who can write the file: a
// program that edits a decision and recomputes every later prev produces a
// journal that verifies. A checkpoint is the journal's head (its id, a seq
// and the hash of that line) signed with an Ed25519 key kept outside the
// journal's directory, in the signed-note format of golang.org/x/mod/sumdb/note.
// Anyone holding the public key can then tell a rewritten chain, a journal
// cut back to an earlier head, or checkpoints of another journal apart from
// the original.

// Defaults for Checkpoints.
const (
	DefaultCheckpointEvery    = 1000
	DefaultCheckpointInterval = time.Minute
)

// maxCheckpointLine bounds one line of a checkpoint file when reading.
const maxCheckpointLine = 4 << 10

const checkpointHeader = "mcpsafe journal checkpoint v1"

// Checkpoints configures signed checkpoints (WithCheckpoints).
type Checkpoints struct {
	// KeyFile holds the signer key (see GenerateCheckpointKey). It must not
	// be inside the journal's directory, nor readable by group or others:
	// whoever can read it can sign a rewritten journal.
	KeyFile string
	// Every is the number of records between checkpoints
	// (DefaultCheckpointEvery when 0).
	Every int
	// Interval is the longest time a new record stays without a checkpoint
	// (DefaultCheckpointInterval when 0).
	Interval time.Duration
	// Witness, if set, is a second file that receives every checkpoint. It
	// must be outside the journal's directory: an attacker who rewrites
	// the journal and its checkpoint file then still has to reach it.
	Witness string
	// WitnessURL, if set, is an HTTP witness (`mcpsafe journal witness
	// serve`, see witness.go) that receives every checkpoint, sent in the
	// background: a witness that is down never slows or stops the journal.
	WitnessURL string
	// WitnessTokenFile holds the bearer token for WitnessURL (a file, not
	// a flag value, so that it stays out of process listings).
	WitnessTokenFile string
	// WitnessCloseWait bounds how long Close tries to deliver the last
	// checkpoints to WitnessURL (DefaultWitnessCloseWait when 0).
	WitnessCloseWait time.Duration
	// Logger receives the witness's delivery failures (slog.Default when nil).
	Logger *slog.Logger
}

// WithCheckpoints makes the journal sign its head every c.Every records,
// every c.Interval while records keep coming, and at Close, appending each
// checkpoint to CheckpointsPath(path) and to c.Witness. Open refuses a key
// in the journal's directory, and refuses a journal that contradicts the
// checkpoints already written for it.
func WithCheckpoints(c Checkpoints) Option {
	return func(o *options) { o.ckpt = &c }
}

// CheckpointsPath is where a journal at path keeps its checkpoints.
func CheckpointsPath(path string) string { return path + ".checkpoints" }

// Checkpoint is one signed statement: journal Journal had Seq records, the
// last one hashing to Hash, at Time.
type Checkpoint struct {
	Journal string // SHA-256 of the journal's first line: its identity
	Seq     uint64
	Hash    string
	Time    time.Time
	Key     string // name of the key that signed it
}

func (c Checkpoint) text() string {
	return fmt.Sprintf("%s\njournal %s\nseq %d\nhead %s\ntime %s\n",
		checkpointHeader, c.Journal, c.Seq, c.Hash, c.Time.UTC().Format(time.RFC3339Nano))
}

func parseCheckpointText(text string) (Checkpoint, error) {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) != 5 || lines[0] != checkpointHeader {
		return Checkpoint{}, errors.New("not an mcpsafe journal checkpoint")
	}
	field := func(i int, name string) (string, error) {
		v, ok := strings.CutPrefix(lines[i], name+" ")
		if !ok || v == "" {
			return "", fmt.Errorf("line %d is not %q", i+1, name)
		}
		return v, nil
	}
	var c Checkpoint
	var err error
	var seq, tm string
	if c.Journal, err = field(1, "journal"); err != nil {
		return c, err
	}
	if seq, err = field(2, "seq"); err != nil {
		return c, err
	}
	if c.Hash, err = field(3, "head"); err != nil {
		return c, err
	}
	if tm, err = field(4, "time"); err != nil {
		return c, err
	}
	if !isHash(c.Journal) || !isHash(c.Hash) {
		return c, errors.New("journal and head must be SHA-256 hex")
	}
	if c.Seq, err = strconv.ParseUint(seq, 10, 64); err != nil || c.Seq == 0 {
		return c, fmt.Errorf("bad seq %q", seq)
	}
	if c.Time, err = time.Parse(time.RFC3339Nano, tm); err != nil {
		return c, fmt.Errorf("bad time: %w", err)
	}
	return c, nil
}

func isHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

// GenerateCheckpointKey returns a new signer key and its public (verifier)
// key in the note format, named name (for example the server's audience).
func GenerateCheckpointKey(name string) (signer, verifier string, err error) {
	return note.GenerateKey(rand.Reader, name)
}

// LoadCheckpointVerifier reads a public key written by
// GenerateCheckpointKey.
func LoadCheckpointVerifier(path string) (note.Verifier, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("journal: checkpoint public key: %w", err)
	}
	v, err := note.NewVerifier(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("journal: checkpoint public key %s: %w", path, err)
	}
	return v, nil
}

// signerKey is a loaded signer with the verifier that goes with it, so
// that Open can check existing checkpoints without a second file.
type signerKey struct {
	signer   note.Signer
	verifier note.Verifier
}

// loadSigner reads the signer key at path after checking that it lives
// outside dir (the journal's directory) and is private to its owner.
func loadSigner(path, dir string) (*signerKey, error) {
	if path == "" {
		return nil, errors.New("journal: checkpoints need a key file")
	}
	if err := outside(path, dir); err != nil {
		return nil, fmt.Errorf("journal: checkpoint key %s: %w: anyone who can write the journal could read it and sign a rewritten chain; keep it elsewhere", path, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("journal: checkpoint key: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("journal: checkpoint key %s is readable by group or others (mode %v); chmod 600 it", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("journal: checkpoint key: %w", err)
	}
	skey := strings.TrimSpace(string(b))
	s, err := note.NewSigner(skey)
	if err != nil {
		return nil, fmt.Errorf("journal: checkpoint key %s: %w", path, err)
	}
	// The note package has no way back from a signer to its verifier:
	// derive the public key from the seed (PRIVATE+KEY+name+hash+base64(alg||seed)).
	// The base64 part may itself contain "+": split off exactly four fields.
	parts := strings.SplitN(skey, "+", 5)
	if len(parts) != 5 {
		return nil, fmt.Errorf("journal: checkpoint key %s is not an Ed25519 signer key", path)
	}
	raw, err := base64.StdEncoding.DecodeString(parts[4])
	if err != nil || len(raw) != 1+ed25519.SeedSize {
		return nil, fmt.Errorf("journal: checkpoint key %s is not an Ed25519 signer key", path)
	}
	pub := ed25519.NewKeyFromSeed(raw[1:]).Public().(ed25519.PublicKey)
	vkey, err := note.NewEd25519VerifierKey(s.Name(), pub)
	if err != nil {
		return nil, fmt.Errorf("journal: checkpoint key %s: %w", path, err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, fmt.Errorf("journal: checkpoint key %s: %w", path, err)
	}
	return &signerKey{signer: s, verifier: v}, nil
}

// outside reports an error if path (after resolving symlinks) is dir or
// below it.
func outside(path, dir string) error {
	p, err := resolve(path)
	if err != nil {
		return err
	}
	d, err := resolve(dir)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(d, p)
	if err != nil {
		return err
	}
	if rel == "." || rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("it is inside the journal's directory %s", d)
	}
	return nil
}

// resolve makes path absolute and resolves symlinks in as much of it as
// exists, so that a file not yet created is still placed correctly.
func resolve(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	rest := ""
	for cur := abs; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest), nil
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// CheckpointError says the journal contradicts a signed checkpoint, or the
// checkpoints themselves cannot be trusted.
type CheckpointError struct {
	Kind   string // one of the Checkpoint* kinds below
	Reason string
}

// Kinds of CheckpointError.
const (
	CheckpointRewritten    = "rewritten"     // a line's hash differs from the signed one
	CheckpointTruncated    = "truncated"     // a checkpoint names a seq past the journal's end
	CheckpointOtherJournal = "other-journal" // a checkpoint names another journal
	CheckpointBadSignature = "bad-signature" // unsigned, wrongly signed or signed by another key
	CheckpointMalformed    = "malformed"     // not a checkpoint
	CheckpointMissing      = "missing"       // records but no checkpoint at all
)

func (e *CheckpointError) Error() string {
	return fmt.Sprintf("journal: checkpoint check failed (%s): %s", e.Kind, e.Reason)
}

// ReadCheckpoints reads a checkpoint file, checking every signature with v.
// A final checkpoint cut short by a crash mid-write is skipped; torn is
// then the offset where it starts.
func ReadCheckpoints(r io.Reader, v note.Verifier) (cps []Checkpoint, torn int64, err error) {
	torn = -1
	br := bufio.NewReaderSize(r, maxCheckpointLine+1)
	var block []byte
	var off, start int64
	inSigs := false
	n := 0
	finish := func() error {
		n++
		msg, err := note.Open(block, note.VerifierList(v))
		if err != nil {
			var unknown *note.UnknownVerifierError
			switch {
			case errors.As(err, &unknown):
				return &CheckpointError{Kind: CheckpointBadSignature, Reason: fmt.Sprintf("checkpoint %d is signed by key %q, not by %q", n, unknown.Name, v.Name())}
			default:
				return &CheckpointError{Kind: CheckpointBadSignature, Reason: fmt.Sprintf("checkpoint %d: %v", n, err)}
			}
		}
		c, err := parseCheckpointText(msg.Text)
		if err != nil {
			return &CheckpointError{Kind: CheckpointMalformed, Reason: fmt.Sprintf("checkpoint %d: %v", n, err)}
		}
		c.Key = v.Name()
		cps = append(cps, c)
		block = block[:0]
		inSigs = false
		return nil
	}
	for {
		line, rerr := br.ReadSlice('\n')
		if rerr == bufio.ErrBufferFull {
			return cps, torn, &CheckpointError{Kind: CheckpointMalformed, Reason: fmt.Sprintf("a line longer than %d bytes at offset %d", maxCheckpointLine, off)}
		}
		if rerr == io.EOF {
			if len(line) > 0 || len(block) > 0 && !inSigs {
				// The last write never finished.
				return cps, start, nil
			}
			if len(block) > 0 {
				if err := finish(); err != nil {
					return cps, torn, err
				}
			}
			return cps, torn, nil
		}
		if rerr != nil {
			return cps, torn, fmt.Errorf("journal: reading checkpoints: %w", rerr)
		}
		isSig := bytes.HasPrefix(line, []byte("— "))
		if inSigs && !isSig {
			if err := finish(); err != nil {
				return cps, torn, err
			}
		}
		if len(block) == 0 {
			start = off
		}
		if len(line) == 1 && !inSigs && len(block) > 0 {
			inSigs = true
		}
		block = append(block, line...)
		off += int64(len(line))
	}
}

// readCheckpointFile is ReadCheckpoints on a file; a missing file has no
// checkpoints.
func readCheckpointFile(path string, v note.Verifier) ([]Checkpoint, int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, -1, nil
	}
	if err != nil {
		return nil, -1, fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	cps, torn, err := ReadCheckpoints(f, v)
	if err != nil {
		return nil, torn, fmt.Errorf("%s: %w", path, err)
	}
	return cps, torn, nil
}

// CheckpointReport describes what the checkpoints of a verified journal
// cover.
type CheckpointReport struct {
	Checkpoints int        // checkpoints checked, over all files
	Latest      Checkpoint // the one with the highest seq
	// Uncovered counts records after Latest: a rewrite of those is not
	// detected (Close checkpoints the head, so a cleanly closed journal
	// has none).
	Uncovered int
	TornFiles []string // checkpoint files whose final checkpoint was cut short
	// Start is set for a pruned journal (Summary.FirstSeq > 1): the
	// earliest checkpoint the chain was held against, which vouches for
	// every record from where the journal now begins up to its seq.
	Start *Checkpoint
}

// String is the line `mcpsafe journal verify --key` adds.
func (r CheckpointReport) String() string {
	s := fmt.Sprintf("signed: %d checkpoint(s) by %s agree with the chain; latest seq %d at %s; %d record(s) after it not covered",
		r.Checkpoints, r.Latest.Key, r.Latest.Seq, r.Latest.Time.UTC().Format(time.RFC3339), r.Uncovered)
	if r.Start != nil {
		s += fmt.Sprintf("; the oldest segments were pruned: the checkpoint signed at %s for seq %d vouches for where the journal now begins",
			r.Start.Time.UTC().Format(time.RFC3339), r.Start.Seq)
	}
	for _, f := range r.TornFiles {
		s += fmt.Sprintf("; %s ends in a checkpoint cut short by a crash (ignored)", f)
	}
	return s
}

// checkAgainst compares a journal's line hashes with cps. hashAt(seq) is
// known for every line through hashes collected while scanning: the hash
// of line k is the prev of line k+1, or the summary's LastHash for the
// last line.
type checkpointIndex struct {
	bySeq   map[uint64][]int
	cps     []Checkpoint
	id      string
	err     error
	checked int        // checkpoints held against a line of the chain
	first   Checkpoint // the first of them
}

func newCheckpointIndex(cps []Checkpoint) *checkpointIndex {
	ix := &checkpointIndex{bySeq: map[uint64][]int{}, cps: cps}
	for i, c := range cps {
		ix.bySeq[c.Seq] = append(ix.bySeq[c.Seq], i)
	}
	return ix
}

// line is called for line seq-1's hash (the prev of line seq).
func (ix *checkpointIndex) hash(seq uint64, h string) {
	if ix.err != nil {
		return
	}
	if seq == 1 {
		ix.id = h
	}
	for _, i := range ix.bySeq[seq] {
		c := ix.cps[i]
		if ix.id == "" && c.Hash == h {
			// A pruned journal no longer has its line 1: its identity is
			// the one named by the first checkpoint that matches the
			// chain where it now begins or later.
			ix.id = c.Journal
		}
		if ix.checked == 0 {
			ix.first = c
		}
		ix.checked++
		if c.Journal != ix.id {
			ix.err = &CheckpointError{Kind: CheckpointOtherJournal, Reason: fmt.Sprintf("the checkpoint signed at %s for seq %d names journal %s, but this journal's first line hashes to %s: it belongs to another journal, or line 1 was rewritten", c.Time.UTC().Format(time.RFC3339), c.Seq, c.Journal, ix.id)}
			return
		}
		if c.Hash != h {
			ix.err = &CheckpointError{Kind: CheckpointRewritten, Reason: fmt.Sprintf("line %d hashes to %s but the checkpoint signed at %s says %s: the journal was rewritten at or before line %d", seq, h, c.Time.UTC().Format(time.RFC3339), c.Hash, seq)}
			return
		}
	}
}

// finish checks the end of the journal (last seq and hash) against the
// checkpoints and reports.
func (ix *checkpointIndex) finish(sum Summary) (CheckpointReport, error) {
	var rep CheckpointReport
	if sum.Records > 0 {
		ix.hash(sum.LastSeq, sum.LastHash)
	}
	if ix.err != nil {
		return rep, ix.err
	}
	sort.SliceStable(ix.cps, func(a, b int) bool { return ix.cps[a].Seq < ix.cps[b].Seq })
	rep.Checkpoints = len(ix.cps)
	if len(ix.cps) == 0 {
		return rep, nil
	}
	rep.Latest = ix.cps[len(ix.cps)-1]
	if rep.Latest.Seq > sum.LastSeq {
		return rep, &CheckpointError{Kind: CheckpointTruncated, Reason: fmt.Sprintf("a checkpoint signed at %s covers seq %d, but the journal ends at seq %d: records were cut off its end", rep.Latest.Time.UTC().Format(time.RFC3339), rep.Latest.Seq, sum.LastSeq)}
	}
	rep.Uncovered = int(sum.LastSeq - rep.Latest.Seq)
	return rep, nil
}

// VerifySigned verifies the journal at path (as VerifyFile, head file
// included) and checks it
// against every checkpoint in files, each signature with key. With no files
// it reads CheckpointsPath(path); every named file must exist. A journal
// with records and no checkpoint fails (CheckpointMissing): deleting the
// checkpoints must not be a way to escape them.
func VerifySigned(path string, key note.Verifier, files ...string) (Summary, CheckpointReport, error) {
	return VerifySignedSet(path, key, files)
}

// readCheckpointFiles reads every named file (each must exist), checking
// every signature with key.
func readCheckpointFiles(key note.Verifier, files []string) (all []Checkpoint, torn []string, err error) {
	for _, name := range files {
		if _, err := os.Stat(name); err != nil {
			return nil, nil, fmt.Errorf("journal: checkpoints: %w", err)
		}
		cps, t, err := readCheckpointFile(name, key)
		if err != nil {
			return nil, nil, err
		}
		if t >= 0 {
			torn = append(torn, name)
		}
		all = append(all, cps...)
	}
	return all, torn, nil
}

// checkpointer is the writer's side of checkpoints; the writer goroutine
// owns it after Open.
type checkpointer struct {
	key      *signerKey
	every    uint64
	interval time.Duration
	names    []string
	files    []*os.File
	existing []Checkpoint // read at Open, checked against the journal
	lastSeq  uint64
	sender   *witnessSender // nil without Checkpoints.WitnessURL
	err      error          // the last failed checkpoint write, until one succeeds
	errMu    sync.Mutex
}

// newCheckpointer loads the key, checks where the files are, reads the
// checkpoints already written (cutting a torn final one) and opens the
// files for appending.
func newCheckpointer(path string, c Checkpoints) (_ *checkpointer, err error) {
	dir := filepath.Dir(path)
	key, err := loadSigner(c.KeyFile, dir)
	if err != nil {
		return nil, err
	}
	ck := &checkpointer{
		key:      key,
		every:    DefaultCheckpointEvery,
		interval: DefaultCheckpointInterval,
		names:    []string{CheckpointsPath(path)},
	}
	if c.Every > 0 {
		ck.every = uint64(c.Every)
	}
	if c.Interval > 0 {
		ck.interval = c.Interval
	}
	if c.Witness != "" {
		if err := outside(c.Witness, dir); err != nil {
			return nil, fmt.Errorf("journal: checkpoint witness %s: %w: a second copy next to the first is lost with it", c.Witness, err)
		}
		ck.names = append(ck.names, c.Witness)
	}
	defer func() {
		if err != nil {
			ck.close()
		}
	}()
	if c.WitnessURL != "" {
		if ck.sender, err = newWitnessSender(c); err != nil {
			return nil, err
		}
	} else if c.WitnessTokenFile != "" {
		return nil, errors.New("journal: a witness token file without a witness URL")
	}
	for _, name := range ck.names {
		cps, torn, err := readCheckpointFile(name, key.verifier)
		if err != nil {
			return nil, fmt.Errorf("journal: refusing to open: %w", err)
		}
		ck.existing = append(ck.existing, cps...)
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("journal: checkpoints: %w", err)
		}
		ck.files = append(ck.files, f)
		if torn >= 0 {
			if err := f.Truncate(torn); err != nil {
				return nil, fmt.Errorf("journal: cutting a torn checkpoint from %s: %w", name, err)
			}
		}
	}
	return ck, nil
}

func (ck *checkpointer) close() error {
	if ck == nil {
		return nil
	}
	var errs []error
	for _, f := range ck.files {
		errs = append(errs, f.Close())
	}
	ck.files = nil
	// Last, so that the final checkpoint is already queued.
	errs = append(errs, ck.sender.close())
	ck.sender = nil
	return errors.Join(errs...)
}

func (ck *checkpointer) setErr(err error) {
	ck.errMu.Lock()
	ck.err = err
	ck.errMu.Unlock()
}

func (ck *checkpointer) failure() error {
	if ck == nil {
		return nil
	}
	ck.errMu.Lock()
	defer ck.errMu.Unlock()
	return ck.err
}

// checkpoint signs the head if it moved since the last checkpoint and
// appends it, synced, to every checkpoint file. A failure does not stop
// the journal (the records themselves are durable); it is kept for Health
// and Close, and the next checkpoint tries again.
func (j *Journal) checkpoint() {
	ck := j.ck
	if ck == nil || j.seq == 0 || j.seq == ck.lastSeq || j.outage != nil {
		return
	}
	c := Checkpoint{Journal: j.first, Seq: j.seq, Hash: j.prev, Time: j.opts.clock().UTC()}
	msg, err := note.Sign(&note.Note{Text: c.text()}, ck.key.signer)
	if err == nil {
		for i, f := range ck.files {
			fi, serr := f.Stat()
			if serr != nil {
				err = fmt.Errorf("journal: checkpoints %s: %w", ck.names[i], serr)
				break
			}
			if _, werr := f.Write(msg); werr != nil {
				// Cut the partial note away: the next one must not be
				// glued onto it.
				_ = f.Truncate(fi.Size())
				err = fmt.Errorf("journal: writing checkpoint to %s: %w", ck.names[i], werr)
				break
			}
			if serr := f.Sync(); serr != nil {
				err = fmt.Errorf("journal: syncing checkpoint in %s: %w", ck.names[i], serr)
				break
			}
		}
	}
	ck.setErr(err)
	if err == nil {
		ck.lastSeq = j.seq
	}
	if msg != nil {
		// Even when the local files failed: the witness may then hold
		// the only copy. A later checkpoint of the same head is a
		// duplicate the witness accepts.
		ck.sender.send(c.Seq, msg)
	}
}

// Health reports why the journal is not fully working: the failure of the
// last write (records are being refused), of the last checkpoint (records
// are written but not being signed) or of the last rotation (the active
// file grows past its limits). Nil when all work.
func (j *Journal) Health() error {
	return errors.Join(j.failure(), j.ck.failure(), j.rotationFailure())
}

// CheckpointHealth is the failure of the last checkpoint write, or nil.
func (j *Journal) CheckpointHealth() error { return j.ck.failure() }
