// Package witness keeps the signed checkpoints that journals send it
// (`mcpsafe journal witness serve`), append-only and durably, on a machine
// the journals' hosts cannot write.
//
// A checkpoint says "journal J had N records, the last hashing to H",
// signed with the journal's Ed25519 key (package journal). The witness
// takes one only after checking its signature against the public keys it
// was given, and only if it agrees with what it already holds for J: the
// same hash at a seq it has seen, a seq no lower than its latest. A
// checkpoint that contradicts that is refused and kept as evidence: for a
// key that signed two different heads at one seq, or a head behind one it
// signed before, the journal was rewritten or cut back (or the key is in
// the wrong hands). What the witness holds is then what `journal verify
// --witness-url` compares the journal with.
//
// The witness cannot tell a rewritten journal that has grown past its
// latest checkpoint from an honest one (a hash chain has no consistency
// proof without its lines); it takes that checkpoint, and verify still
// refuses the rewritten journal, because the earlier checkpoint it holds
// no longer matches.
//
// The directory holds, per journal id (the SHA-256 of its first line),
// ID.checkpoints (the accepted notes, in the format of a journal's own
// checkpoint file, so `journal verify --checkpoints` reads it too) and
// ID.refused (the refused notes, one JSON line each, with the reason).
package witness

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mcpsafe/mcpsafe/journal"
	"golang.org/x/mod/sumdb/note"
)

// Defaults for Config.
const (
	DefaultMaxJournalBytes  = 64 << 20 // ~250,000 checkpoints of one journal before it is thinned
	DefaultMaxEvidenceBytes = 1 << 20  // refused notes kept per journal
	// DefaultMaxJournalsPerKey bounds the journals one key may start here:
	// with MaxJournalBytes it bounds the disk one key's holder can fill.
	DefaultMaxJournalsPerKey = 64
	// MinTokenLen is the shortest bearer token accepted: long enough that
	// guessing is hopeless, so failed attempts need no throttle.
	MinTokenLen = 32
)

// Config configures Open.
type Config struct {
	Dir    string          // where checkpoints are kept (created 0700)
	Keys   []note.Verifier // public keys whose checkpoints are taken
	Tokens []string        // bearer tokens of the submitters and readers
	Logger *slog.Logger    // slog.Default when nil
	// MaxJournalBytes caps the checkpoints kept for one journal
	// (DefaultMaxJournalBytes when 0). A checkpoint that would pass it
	// first thins the journal's file (see Submit), so that a busy journal
	// stays witnessed; only a checkpoint that does not fit even then gets
	// 507.
	MaxJournalBytes int64
	// MaxEvidenceBytes caps the refused notes kept for one journal
	// (DefaultMaxEvidenceBytes when 0); past it refusals are only logged.
	MaxEvidenceBytes int64
	// MaxJournalsPerKey caps the journals whose checkpoints one key signs
	// here (DefaultMaxJournalsPerKey when 0); past it a new journal of that
	// key gets 507.
	MaxJournalsPerKey int
	Clock             func() time.Time // time.Now when nil
}

// Server holds the checkpoints of a directory. Its methods are safe for
// concurrent use.
type Server struct {
	dir      string
	keys     []note.Verifier
	tokens   [][sha256.Size]byte
	log      *slog.Logger
	maxBytes int64
	maxEvid  int64
	maxPer   int
	clock    func() time.Time
	lock     *os.File

	mu       sync.Mutex
	journals map[string]*held
}

// held is what the witness holds of one journal.
type held struct {
	key      string // the key that signs this journal's checkpoints ("" until the first)
	bySeq    map[uint64]string
	order    []uint64 // the seqs held, in file order
	latest   journal.Checkpoint
	count    int
	thinned  int      // checkpoints dropped by thinning since the witness started
	f        *os.File // ID.checkpoints, append-only
	size     int64    // bytes of f known durable
	evidence int64    // bytes of ID.refused
	refused  int
	broken   error // a failed write left f in doubt: nothing more is taken
}

// Refusal is a submission the witness did not take. Status is the HTTP
// status it answers with.
type Refusal struct {
	Status int
	Kind   string // one of the Refused* kinds
	Reason string
}

// Kinds of Refusal.
const (
	RefusedSignature = "bad-signature" // not signed by exactly one trusted key
	RefusedMalformed = "malformed"     // signed, but not a checkpoint
	RefusedFork      = "fork"          // another hash at a seq already witnessed
	RefusedRollback  = "rollback"      // a seq below the latest witnessed
	RefusedOtherKey  = "other-key"     // signed by a trusted key, not this journal's
	RefusedFull      = "full"          // MaxJournalBytes reached
	RefusedTooMany   = "too-many"      // MaxJournalsPerKey reached
	RefusedBroken    = "unavailable"   // the journal's file could not be written
)

func (r *Refusal) Error() string {
	return fmt.Sprintf("witness: checkpoint refused (%s): %s", r.Kind, r.Reason)
}

// Open loads every journal's checkpoints from cfg.Dir, checking each
// signature and that each file only ever went forward, and locks the
// directory. A final checkpoint cut short by a crash is cut away; any other
// damage refuses to open: the witness's own history must be intact.
func Open(cfg Config) (_ *Server, err error) {
	if cfg.Dir == "" {
		return nil, errors.New("witness: a directory is required")
	}
	if len(cfg.Keys) == 0 {
		return nil, errors.New("witness: at least one public key is required: checkpoints are taken only when signed by a known key")
	}
	if len(cfg.Tokens) == 0 {
		return nil, errors.New("witness: at least one bearer token is required")
	}
	s := &Server{
		dir:      cfg.Dir,
		keys:     cfg.Keys,
		log:      cfg.Logger,
		maxBytes: cfg.MaxJournalBytes,
		maxEvid:  cfg.MaxEvidenceBytes,
		maxPer:   cfg.MaxJournalsPerKey,
		clock:    cfg.Clock,
		journals: map[string]*held{},
	}
	for _, t := range cfg.Tokens {
		if len(t) < MinTokenLen {
			return nil, fmt.Errorf("witness: a bearer token is %d characters, under the %d required", len(t), MinTokenLen)
		}
		s.tokens = append(s.tokens, sha256.Sum256([]byte(t)))
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.maxBytes <= 0 {
		s.maxBytes = DefaultMaxJournalBytes
	}
	if s.maxEvid <= 0 {
		s.maxEvid = DefaultMaxEvidenceBytes
	}
	if s.maxPer <= 0 {
		s.maxPer = DefaultMaxJournalsPerKey
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	names := map[string]bool{}
	for _, k := range s.keys {
		if names[k.Name()] {
			return nil, fmt.Errorf("witness: two public keys named %q: checkpoints name their key", k.Name())
		}
		names[k.Name()] = true
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("witness: %w", err)
	}
	if s.lock, err = os.OpenFile(filepath.Join(s.dir, ".lock"), os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		return nil, fmt.Errorf("witness: %w", err)
	}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if err := lockDir(s.lock); err != nil {
		return nil, fmt.Errorf("witness: %s is in use by another witness: %w", s.dir, err)
	}
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("witness: %w", err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), thinPrefix) {
			// A thinning cut short before its rename: the journal's file
			// is still the whole one.
			if err := os.Remove(filepath.Join(s.dir, e.Name())); err != nil {
				return nil, fmt.Errorf("witness: %w", err)
			}
			continue
		}
		id, ok := strings.CutSuffix(e.Name(), ".checkpoints")
		if !ok {
			continue
		}
		if !isID(id) {
			return nil, fmt.Errorf("witness: %s: not a journal id", filepath.Join(s.dir, e.Name()))
		}
		h, err := s.load(id)
		if err != nil {
			return nil, err
		}
		s.journals[id] = h
	}
	return s, nil
}

func isID(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

func (s *Server) checkpointsPath(id string) string {
	return filepath.Join(s.dir, id+".checkpoints")
}

func (s *Server) evidencePath(id string) string {
	return filepath.Join(s.dir, id+".refused")
}

// load reads one journal's file with whichever trusted key signed it.
func (s *Server) load(id string) (*held, error) {
	path := s.checkpointsPath(id)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("witness: %w", err)
	}
	fail := func(err error) (*held, error) {
		f.Close()
		return nil, err
	}
	var cps []journal.Checkpoint
	torn := int64(-1)
	var tried []string
	for _, k := range s.keys {
		if _, err := f.Seek(0, 0); err != nil {
			return fail(fmt.Errorf("witness: %w", err))
		}
		c, t, rerr := journal.ReadCheckpoints(f, k)
		if rerr == nil {
			cps, torn = c, t
			tried = nil
			break
		}
		tried = append(tried, fmt.Sprintf("%s: %v", k.Name(), rerr))
	}
	if tried != nil {
		return fail(fmt.Errorf("witness: %s does not read as checkpoints signed by one trusted key (a key removed from the list, or the file was damaged): %s", path, strings.Join(tried, "; ")))
	}
	h := &held{bySeq: map[uint64]string{}, f: f}
	for i, c := range cps {
		if c.Journal != id {
			return fail(fmt.Errorf("witness: %s: checkpoint %d names journal %s", path, i+1, c.Journal))
		}
		if i > 0 && c.Seq <= h.latest.Seq {
			return fail(fmt.Errorf("witness: %s: checkpoint %d (seq %d) does not follow seq %d: the witness never stores that; the file was edited", path, i+1, c.Seq, h.latest.Seq))
		}
		h.bySeq[c.Seq] = c.Hash
		h.order = append(h.order, c.Seq)
		h.latest = c
		h.key = c.Key
		h.count++
	}
	if torn >= 0 {
		if err := f.Truncate(torn); err != nil {
			return fail(fmt.Errorf("witness: cutting a torn checkpoint from %s: %w", path, err))
		}
		if err := f.Sync(); err != nil {
			return fail(fmt.Errorf("witness: %s: %w", path, err))
		}
		s.log.Warn("witness: cut a checkpoint cut short by a crash mid-write; its sender was never told it was stored", "file", path, "offset", torn)
	}
	fi, err := f.Stat()
	if err != nil {
		return fail(fmt.Errorf("witness: %w", err))
	}
	h.size = fi.Size()
	if fi, err := os.Stat(s.evidencePath(id)); err == nil {
		h.evidence = fi.Size()
	}
	return h, nil
}

// Close releases the files and the directory lock.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, h := range s.journals {
		errs = append(errs, h.f.Close())
	}
	s.journals = map[string]*held{}
	if s.lock != nil {
		errs = append(errs, s.lock.Close())
		s.lock = nil
	}
	return errors.Join(errs...)
}

// Result says what Submit did with an accepted checkpoint.
type Result struct {
	Checkpoint journal.Checkpoint
	Stored     bool // false: the same head was already witnessed
}

// Submit takes one signed checkpoint note from the submitter named from
// (for the log and the evidence). It checks the signature before reading
// anything in the note, then the note against what the witness holds, and
// appends it, synced, before returning. A *Refusal says why not.
func (s *Server) Submit(msg []byte, from string) (Result, error) {
	c, err := journal.OpenCheckpoint(msg, s.keys...)
	if err != nil {
		var ce *journal.CheckpointError
		if errors.As(err, &ce) && ce.Kind == journal.CheckpointMalformed {
			return Result{}, &Refusal{Status: http.StatusBadRequest, Kind: RefusedMalformed, Reason: ce.Reason}
		}
		s.log.Warn("witness: refused a checkpoint not signed by a trusted key", "from", from, "err", err)
		return Result{}, &Refusal{Status: http.StatusForbidden, Kind: RefusedSignature, Reason: err.Error()}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.journals[c.Journal]
	if h == nil {
		if n := s.journalsOf(c.Key); n >= s.maxPer {
			s.log.Error("witness: a key reached its journal limit; refusing a new journal", "key", c.Key, "journal", c.Journal, "limit", s.maxPer, "from", from)
			return Result{}, &Refusal{Status: http.StatusInsufficientStorage, Kind: RefusedTooMany, Reason: fmt.Sprintf("key %q already signs %d journals here, the witness's limit", c.Key, n)}
		}
		if h, err = s.create(c.Journal); err != nil {
			return Result{}, err
		}
	}
	if h.broken != nil {
		return Result{}, &Refusal{Status: http.StatusServiceUnavailable, Kind: RefusedBroken, Reason: h.broken.Error()}
	}
	if r := check(h, c); r != nil {
		if r.Kind == RefusedOtherKey {
			// Another trusted key's note for this journal says nothing
			// about this journal's history; kept in this journal's
			// evidence it would crowd out a real fork's. Logged only.
			h.refused++
			s.log.Error("witness: REFUSED a checkpoint signed by another key than the journal's", "journal", c.Journal, "key", c.Key, "journal_key", h.key, "seq", c.Seq, "from", from)
			return Result{}, r
		}
		s.refuse(h, c, msg, from, r)
		return Result{}, r
	}
	if hash, ok := h.bySeq[c.Seq]; ok && hash == c.Hash {
		return Result{Checkpoint: c}, nil
	}
	if h.size+int64(len(msg)) > s.maxBytes {
		if err := s.thin(h, c.Journal); err != nil {
			return Result{}, err
		}
	}
	if h.size+int64(len(msg)) > s.maxBytes {
		s.log.Error("witness: a journal's checkpoints reached the size limit; refusing more", "journal", c.Journal, "limit", s.maxBytes)
		return Result{}, &Refusal{Status: http.StatusInsufficientStorage, Kind: RefusedFull, Reason: fmt.Sprintf("the checkpoints of journal %s reached the witness's %d-byte limit", c.Journal, s.maxBytes)}
	}
	if err := appendSynced(h.f, h.size, msg); err != nil {
		h.broken = fmt.Errorf("writing %s failed: %v; restart the witness once the disk is fixed", s.checkpointsPath(c.Journal), err)
		s.log.Error("witness: cannot store checkpoints", "journal", c.Journal, "err", err)
		return Result{}, &Refusal{Status: http.StatusServiceUnavailable, Kind: RefusedBroken, Reason: "the witness could not store the checkpoint"}
	}
	h.size += int64(len(msg))
	h.bySeq[c.Seq] = c.Hash
	h.order = append(h.order, c.Seq)
	h.latest = c
	h.key = c.Key
	h.count++
	return Result{Checkpoint: c, Stored: true}, nil
}

// check says why c contradicts what the witness holds of its journal, or
// nil: the same head again, or one past the latest.
func check(h *held, c journal.Checkpoint) *Refusal {
	if h.key != "" && c.Key != h.key {
		return &Refusal{Status: http.StatusConflict, Kind: RefusedOtherKey, Reason: fmt.Sprintf(
			"journal %s is signed by key %q here, this checkpoint by %q", c.Journal, h.key, c.Key)}
	}
	if hash, ok := h.bySeq[c.Seq]; ok {
		if hash == c.Hash {
			return nil
		}
		return &Refusal{Status: http.StatusConflict, Kind: RefusedFork, Reason: fmt.Sprintf(
			"journal %s had seq %d hashing to %s when it was witnessed; this checkpoint says %s: the journal was rewritten (or its key signed two histories)", c.Journal, c.Seq, hash, c.Hash)}
	}
	if c.Seq < h.latest.Seq {
		return &Refusal{Status: http.StatusConflict, Kind: RefusedRollback, Reason: fmt.Sprintf(
			"journal %s was witnessed at seq %d; this checkpoint goes back to seq %d: the journal was cut back or rewritten", c.Journal, h.latest.Seq, c.Seq)}
	}
	return nil
}

// create starts the file of a journal the witness has not seen.
func (s *Server) create(id string) (*held, error) {
	path := s.checkpointsPath(id)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err == nil {
		err = syncDir(s.dir)
		if err != nil {
			f.Close()
			os.Remove(path)
		}
	}
	if err != nil {
		s.log.Error("witness: cannot create a journal's file", "file", path, "err", err)
		return nil, &Refusal{Status: http.StatusServiceUnavailable, Kind: RefusedBroken, Reason: "the witness could not store the checkpoint"}
	}
	h := &held{bySeq: map[uint64]string{}, f: f}
	s.journals[id] = h
	return h, nil
}

// appendSynced writes b at the end of f and syncs it; on failure it cuts
// f back to size, so that no partial note stays for the next to be glued to.
func appendSynced(f *os.File, size int64, b []byte) error {
	_, err := f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		if terr := f.Truncate(size); terr != nil {
			return errors.Join(err, terr)
		}
		if serr := f.Sync(); serr != nil {
			return errors.Join(err, serr)
		}
		return err
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// evidence is one line of ID.refused.
type evidence struct {
	Time   time.Time `json:"time"`
	From   string    `json:"from"`
	Kind   string    `json:"kind"`
	Reason string    `json:"reason"`
	Note   string    `json:"note"` // the signed note as submitted
}

// refuse logs a refused, validly signed checkpoint and keeps it: a note
// signed by the journal's own key that contradicts an earlier one is the
// proof of a rewrite.
func (s *Server) refuse(h *held, c journal.Checkpoint, msg []byte, from string, r *Refusal) {
	h.refused++
	s.log.Error("witness: REFUSED a checkpoint that contradicts what this witness holds; the journal was rewritten or cut back, or its key signed two histories",
		"journal", c.Journal, "kind", r.Kind, "seq", c.Seq, "hash", c.Hash, "witnessed_seq", h.latest.Seq, "from", from, "reason", r.Reason)
	line, err := json.Marshal(evidence{Time: s.clock().UTC(), From: from, Kind: r.Kind, Reason: r.Reason, Note: string(msg)})
	if err != nil {
		return
	}
	line = append(line, '\n')
	if h.evidence+int64(len(line)) > s.maxEvid {
		s.log.Error("witness: evidence file full; this refusal is only logged", "journal", c.Journal, "limit", s.maxEvid)
		return
	}
	path := s.evidencePath(c.Journal)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err == nil {
		var fi os.FileInfo
		if fi, err = f.Stat(); err == nil {
			err = appendSynced(f, fi.Size(), line)
		}
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		s.log.Error("witness: cannot keep the refused checkpoint as evidence", "file", path, "err", err)
		return
	}
	h.evidence += int64(len(line))
}

// Held is what the witness holds of one journal (the list answer).
type Held struct {
	Journal     string    `json:"journal"`
	Key         string    `json:"key"`
	Checkpoints int       `json:"checkpoints"`
	LatestSeq   uint64    `json:"latest_seq"`
	LatestHash  string    `json:"latest_hash"`
	LatestTime  time.Time `json:"latest_time"`
	Refused     int       `json:"refused"` // since the witness started
	Thinned     int       `json:"thinned"` // checkpoints dropped by thinning, since the witness started
}

// List describes every journal the witness holds checkpoints of.
func (s *Server) List() []Held {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Held, 0, len(s.journals))
	for id, h := range s.journals {
		out = append(out, Held{Journal: id, Key: h.key, Checkpoints: h.count, LatestSeq: h.latest.Seq,
			LatestHash: h.latest.Hash, LatestTime: h.latest.Time, Refused: h.refused, Thinned: h.thinned})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Journal < out[b].Journal })
	return out
}

// Notes returns the signed notes held for journal id, in the order they
// were taken; nil for a journal the witness has not seen.
func (s *Server) Notes(id string) ([]byte, error) {
	if !isID(id) {
		return nil, fmt.Errorf("witness: %q is not a journal id", id)
	}
	s.mu.Lock()
	h := s.journals[id]
	var size int64
	if h != nil {
		size = h.size
	}
	s.mu.Unlock()
	if size == 0 {
		return nil, nil
	}
	f, err := os.Open(s.checkpointsPath(id))
	if err != nil {
		return nil, fmt.Errorf("witness: %w", err)
	}
	defer f.Close()
	// Only what was durable when asked: a note being written is not yet held.
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil {
		return nil, fmt.Errorf("witness: %w", err)
	}
	return b, nil
}

// authorized checks a bearer token against every configured one, in
// constant time, and names the submitter by a short hash of its token.
func (s *Server) authorized(r *http.Request) (string, bool) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		return "", false
	}
	sum := sha256.Sum256([]byte(tok))
	match := 0
	for _, t := range s.tokens {
		match |= subtle.ConstantTimeCompare(sum[:], t[:])
	}
	if match != 1 {
		return "", false
	}
	return "token-" + hex.EncodeToString(sum[:4]), true
}

// journalsOf counts the journals whose checkpoints key signs here.
func (s *Server) journalsOf(key string) int {
	n := 0
	for _, h := range s.journals {
		if h.key == key {
			n++
		}
	}
	return n
}

// thinPrefix names the file a thinning writes before it replaces a
// journal's file.
const thinPrefix = ".thinning-"

// thin makes room in a journal's file that reached MaxJournalBytes, so
// that the witness keeps covering a busy journal instead of refusing it
// for good. It keeps the newer half of the checkpoints whole and, of the
// older half, the first checkpoint and those 1, 2, 4, 8... checkpoints
// before the newer half: a sparse history. Every checkpoint kept still
// vouches for every record up to its seq (the chain links them), and the
// latest is always kept, so rollbacks and forks at or past it are refused
// as before; a thinned seq below the latest is refused as a rollback.
// What is lost is the older history's density: a journal rewritten at
// some record and then pushed forward with half the limit's worth of
// checkpoints may keep no witnessed checkpoint between that record and
// its rewrite. Each thinning is logged and counted (Held.Thinned).
//
// The new file is written beside the old one, synced, and renamed over
// it: a crash leaves either file whole.
func (s *Server) thin(h *held, id string) error {
	path := s.checkpointsPath(id)
	fail := func(err error) error {
		s.log.Error("witness: cannot thin a journal's checkpoints", "journal", id, "err", err)
		return &Refusal{Status: http.StatusServiceUnavailable, Kind: RefusedBroken, Reason: "the witness could not make room for the checkpoint"}
	}
	data := make([]byte, h.size)
	if _, err := h.f.ReadAt(data, 0); err != nil {
		return fail(err)
	}
	notes := splitNotes(data)
	if len(notes) != len(h.order) {
		return fail(fmt.Errorf("%s holds %d notes, %d were read at start", path, len(notes), len(h.order)))
	}
	n := len(notes)
	keep := make([]bool, n)
	half := n / 2
	for i := half; i < n; i++ {
		keep[i] = true
	}
	if n > 0 {
		keep[0] = true
	}
	for d := 1; half-d >= 0; d *= 2 {
		keep[half-d] = true
	}
	tmp, err := os.CreateTemp(s.dir, thinPrefix+"*")
	if err != nil {
		return fail(err)
	}
	defer os.Remove(tmp.Name()) // gone once renamed
	var size int64
	var order []uint64
	bySeq := map[uint64]string{}
	for i, b := range notes {
		if !keep[i] {
			continue
		}
		if _, err := tmp.Write(b); err != nil {
			tmp.Close()
			return fail(err)
		}
		size += int64(len(b))
		order = append(order, h.order[i])
		bySeq[h.order[i]] = h.bySeq[h.order[i]]
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fail(err)
	}
	if err := syncDir(s.dir); err != nil {
		h.broken = fmt.Errorf("thinning %s: %v; restart the witness once the disk is fixed", path, err)
		return fail(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		h.broken = fmt.Errorf("reopening %s after thinning: %v; restart the witness once the disk is fixed", path, err)
		return fail(err)
	}
	h.f.Close()
	dropped := n - len(order)
	h.f, h.size, h.order, h.bySeq, h.count = f, size, order, bySeq, len(order)
	h.thinned += dropped
	s.log.Warn("witness: a journal's checkpoints reached the size limit; thinned its older half to make room",
		"journal", id, "limit", s.maxBytes, "kept", len(order), "dropped", dropped, "oldest_kept_seq", order[0], "latest_seq", h.latest.Seq)
	return nil
}

// splitNotes cuts the contents of a checkpoints file (which the witness
// read and checked at start, and has only appended whole notes to since)
// into its notes: each is text lines, a blank line, then signature lines
// ("— name sig"); a line that is not a signature after them starts the
// next note.
func splitNotes(data []byte) [][]byte {
	var out [][]byte
	start, inSigs := 0, false
	for off := 0; off < len(data); {
		end := off + bytes.IndexByte(data[off:], '\n') + 1
		if end <= off {
			end = len(data)
		}
		line := data[off:end]
		isSig := bytes.HasPrefix(line, []byte("— "))
		if inSigs && !isSig {
			out = append(out, data[start:off])
			start, inSigs = off, false
		}
		if len(line) == 1 && !inSigs && off > start {
			inSigs = true
		}
		off = end
	}
	if start < len(data) {
		out = append(out, data[start:])
	}
	return out
}
