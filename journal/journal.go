package journal

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unicode/utf8"
)

// Recovered is the decision of the record Open appends after cutting away a
// torn final line, so the cut itself is part of the chain.
const Recovered = "journal-recovered"

// ErrClosed is returned by Append after Close.
var ErrClosed = errors.New("journal: closed")

// ErrRefusalsCapped is returned by Append for a refusal-class record
// (refused, declined, cancelled, timeout) once the file has reached its
// size limit (WithMaxBytes): refused calls cannot grow the journal without
// bound. The first such record is replaced by one note saying so.
var ErrRefusalsCapped = errors.New("journal: size limit reached; refusals are no longer recorded")

// Limits on what one record keeps of the arguments: the redacted copy is
// replaced by a note past them, and args_digest still names the full
// arguments. Refusals get the small one: anyone can send them, in bulk.
const (
	MaxArgsBytes        = 64 << 10 // approvals and outcomes
	MaxRefusalArgsBytes = 4 << 10  // refused, declined, cancelled, timeout
	maxRefusalSummary   = 1 << 10  // bytes of a refusal's plan summary
	maxSummary          = 16 << 10 // bytes of any other plan summary
	maxError            = 8 << 10  // bytes of an error or reason text
)

// DefaultMaxBytes is the default size limit (WithMaxBytes).
const DefaultMaxBytes = 1 << 30

// maxDeferred bounds the outcome records kept in memory while writes fail.
const maxDeferred = 1024

// ErrInUse is returned by Open when another process holds the journal: a
// journal has exactly one writer.
var ErrInUse = errors.New("in use by another process (a journal has one writer)")

// Option configures Open.
type Option func(*options)

type options struct {
	clock    func() time.Time
	maxBatch int
	maxBytes int64
	ckpt     *Checkpoints
	rotation Rotation
	// fault hooks for tests: they stand in for the file's Write and Sync.
	write func(f *os.File, b []byte) (int, error)
	sync  func(f *os.File) error
	// keepLong keeps string arguments over LongValueBytes whole
	// (WithKeepLongValues); by default they are digested.
	keepLong bool
	// syncOutcome: outcome records are fsync'd before Append returns
	// (WithSyncOutcome); by default their fsync joins the next commit.
	syncOutcome bool
	// deferredSync bounds how long a written outcome waits for that
	// commit before the writer fsyncs it on its own (DeferredSyncDelay;
	// tests set it).
	deferredSync time.Duration
	// scanned, for tests, is told how many lines Open read.
	scanned func(lines int)
	// rotateStep, for tests, runs at each step of a rotation (see rotate);
	// an error fails that step, and a call to os.Exit is a crash there.
	rotateStep func(step string) error
}

// WithClock sets the clock that stamps records (default time.Now).
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.clock = now }
}

// WithMaxBatch caps how many records share one write and fsync (default
// 1024). WithMaxBatch(1) gives one fsync per record: the baseline the
// group-commit benchmark compares against.
func WithMaxBatch(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.maxBatch = n
		}
	}
}

// DeferredSyncDelay is how long, at most, an outcome record stays written
// but not yet fsync'd when no other record comes to share its fsync. It is
// longer than the gap between calls of one client working at a human or
// agent pace (a call every 100 ms and slower), so that the outcome rides
// the next call's approval and each call costs one fsync; only the last
// call before an idle pause has its outcome fsync'd on its own, this long
// after it was written.
const DeferredSyncDelay = time.Second

// WithSyncOutcome(true) makes Append of an outcome record (executed,
// failed) return only once it is fsync'd, like every other record: a
// caller then waits for two fsyncs per call, the approval's and the
// outcome's. By default Append returns an outcome as soon as it is
// written, and its fsync joins the next group commit (the next call's
// approval, or at most DeferredSyncDelay, 1 s, later): one fsync per call. The
// approval is always fsync'd before Execute runs. A machine crash (not a
// process crash: the written line is in the kernel's cache) inside that
// window loses the outcome line, and the next Open marks the approval
// ambiguous, as it does for a call whose Execute was interrupted.
func WithSyncOutcome(sync bool) Option {
	return func(o *options) { o.syncOutcome = sync }
}

// WithMaxBytes sets the size limit past which refusal-class records are no
// longer written (default DefaultMaxBytes). Approvals and outcomes are
// always written: they are the record of calls that ran, and a journal that
// cannot take an approval runs nothing. Rotate the journal offline (stop
// the server, move the file away, start again) before it gets there.
func WithMaxBytes(n int64) Option {
	return func(o *options) {
		if n > 0 {
			o.maxBytes = n
		}
	}
}

// Journal is an open, locked, append-only journal file.
type Journal struct {
	path  string
	f     *os.File
	opts  options
	unlck func() error

	// mu guards closed against the close of reqs: Append sends under the
	// read lock so it can never send on a closed channel.
	mu      sync.RWMutex
	closed  bool
	reqs    chan *request
	stopped chan struct{}

	errMu  sync.Mutex
	broken error // the failure of the last write, until a later one succeeds

	// owned by the writer goroutine
	seq      uint64
	prev     string
	size     int64   // bytes of the file known durable and chained
	outage   *outage // non-nil from a failed write until one succeeds
	capNoted bool    // the size-limit note was written
	buf      []byte
	wrote    []*Record     // commit's list of the records it wrote, reused
	head     *os.File      // the head file (HeadSuffix), rewritten after each commit
	headErr  error         // the first failed head update, returned by Close
	first    string        // hash of line 1: the journal's id in checkpoints
	ck       *checkpointer // nil without WithCheckpoints
	segFirst uint64        // seq of the active file's first record; 0 while it has none
	since    time.Time     // time of that record: the active file's age
	stuck    error         // a rotation that could not be undone: nothing more is written
	rotErr   error         // the last failed rotation, until one succeeds (under errMu)
	// pend maps the call of each durable approval still waiting for its
	// outcome to the seq of that approval: the head file's Open is the
	// least of them (see Head.Open).
	pend map[string]uint64
	// redeeming holds the calls of pend opened by a Redeeming record and
	// not yet by an approval: a refusal with their Call closes them.
	redeeming map[string]bool

	// Outcome records written but not yet fsync'd (see WithSyncOutcome),
	// and the chain as of the last fsync: a failed fsync cuts the file
	// back there and writes those outcomes again, late.
	unsynced          []Record
	durSeq            uint64
	durPrev, durFirst string
	durSize           int64
}

// outage is what the writer remembers between a failed write and the next
// one that succeeds: enough to say in the journal what was lost, and the
// outcomes of calls that did run, to be written late.
type outage struct {
	err       error     // the first failure
	since     time.Time // when it happened
	approvals int       // approval records refused: their calls did not run
	others    int       // refusal-class and other records refused
	deferred  []Record  // outcomes refused, written once writes work again
	dropped   int       // outcomes beyond maxDeferred
}

type request struct {
	ctx  context.Context
	rec  Record
	done chan error // buffered: the writer never blocks on a caller that left
}

// Open opens (creating if needed) the journal at path, verifies the tail
// of its chain and takes an exclusive lock on it. It reads from the oldest
// approval still waiting for its outcome (or the head, or the latest
// checkpoint, if older) to the end, not the whole set: see the package
// doc's Opening for what it checks of the rest, and when it does read
// everything. A torn final line is cut away and the cut recorded; any
// other damage in what it reads refuses to open. Approvals left without an
// outcome by a previous process get an ambiguous record each.
func Open(path string, opts ...Option) (*Journal, error) {
	o := options{
		clock:    time.Now,
		maxBatch: 1024,
		maxBytes: DefaultMaxBytes,
		write:    func(f *os.File, b []byte) (int, error) { return f.Write(b) },
		sync:     func(f *os.File) error { return f.Sync() },

		deferredSync: DeferredSyncDelay,
	}
	for _, opt := range opts {
		opt(&o)
	}
	if o.rotation.MaxBytes < 0 || o.rotation.MaxAge < 0 {
		return nil, errors.New("journal: rotation limits must not be negative")
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: creating %s: %w", dir, err)
	}
	var ck *checkpointer
	if o.ckpt != nil {
		var err error
		if ck, err = newCheckpointer(path, *o.ckpt); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		ck.close()
		return nil, fmt.Errorf("journal: %w", err)
	}
	j, err := open(path, f, o, ck)
	if err != nil {
		f.Close()
		ck.close()
		return nil, err
	}
	return j, nil
}

func open(path string, f *os.File, o options, ck *checkpointer) (_ *Journal, err error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if !fi.Mode().IsRegular() {
		// fsync on a device or pipe proves nothing.
		return nil, fmt.Errorf("journal: %s is not a regular file", path)
	}
	unlock, err := lockFile(f)
	if err != nil {
		return nil, fmt.Errorf("journal: %s is %w: %w", path, ErrInUse, err)
	}
	fail := func(err error) (*Journal, error) {
		unlock()
		return nil, err
	}
	// The directory entry must survive a crash as well as the data. Sync it
	// on every open, not only on creation: a first open whose directory
	// sync failed leaves a file that a later open would otherwise trust.
	if err := syncDir(filepath.Dir(path)); err != nil {
		return fail(fmt.Errorf("journal: %w", err))
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fail(fmt.Errorf("journal: %w", err))
	}
	// Read the head only under the lock: a running writer updates it.
	hf, head, err := openHead(path)
	if err != nil {
		return fail(fmt.Errorf("journal: refusing to open %s: %w", path, err))
	}
	defer func() {
		if err != nil && hf != nil {
			hf.Close()
		}
	}()
	// The head file keeps its name when the journal rotates, unlike the
	// active file: its lock is the one that keeps a second writer out
	// across rotations. Closing it releases the lock.
	if _, err := lockFile(hf); err != nil {
		return fail(fmt.Errorf("journal: %s is %w: its head file is locked: %w", path, ErrInUse, err))
	}
	var each func(int, *Record)
	var ix *checkpointIndex
	if ck != nil {
		ix = newCheckpointIndex(ck.existing)
		each = ix.each
	}
	// Only the tail is read when the head file says where it begins (see
	// readTail): from the oldest approval still waiting for its outcome,
	// the head itself or the latest checkpoint, whichever is oldest. The
	// whole set is verified, sealed segments included, when the head has
	// no such hint or the tail is not what the hint promised. Pruned
	// segments are accepted here (deleting old segments is how an
	// operator keeps the journal's size down); verify reports them.
	var set *setScan
	var verr error
	var tail tailScan
	if start := tailStart(head, ck); start > 0 {
		var ok bool
		tail, ok, verr = readTail(path, f, head, start, each)
		var torn *TornError
		if ok && (verr == nil || errors.As(verr, &torn)) {
			set = tail.s
			if ix != nil && tail.id != "" {
				ix.id = tail.id
			}
		} else if ix != nil {
			ix = newCheckpointIndex(ck.existing)
			each = ix.each
		}
	}
	if set == nil {
		tail = tailScan{}
		set, verr = readSet(path, f, head, setOptions{pruned: true}, each)
	}
	if o.scanned != nil && set != nil {
		o.scanned(set.lines)
	}
	if set == nil {
		return fail(fmt.Errorf("journal: refusing to open %s: %w", path, verr))
	}
	res := set.res
	var torn *TornError
	switch {
	case verr == nil:
	case errors.As(verr, &torn):
		if err := cutTail(f, torn); err != nil {
			return fail(err)
		}
	default:
		return fail(fmt.Errorf("journal: refusing to open %s: %w", path, verr))
	}
	if fi, err = f.Stat(); err != nil {
		return fail(fmt.Errorf("journal: %w", err))
	}
	if ix != nil {
		// A journal that contradicts its own signed checkpoints was
		// rewritten or cut: signing its head now would bless that.
		rep, err := ix.finish(res.sum)
		if err != nil {
			return fail(fmt.Errorf("journal: refusing to open %s: %w", path, err))
		}
		first := res.sum.FirstSeq
		if tail.s != nil {
			first = tail.first
		}
		if first > 1 && ix.id == "" {
			// Its line 1 is gone, so only a checkpoint can name it.
			return fail(fmt.Errorf("journal: refusing to open %s: %w", path, &CheckpointError{Kind: CheckpointMissing, Reason: fmt.Sprintf(
				"the journal begins at seq %d (its oldest segments were pruned) and no signed checkpoint matches what remains: its identity, which new checkpoints must name, is unknown", first)}))
		}
		ck.lastSeq = rep.Latest.Seq
	}
	j := &Journal{
		path:    path,
		f:       f,
		opts:    o,
		unlck:   unlock,
		reqs:    make(chan *request, 1024),
		stopped: make(chan struct{}),
		seq:     res.sum.LastSeq,
		prev:    res.sum.LastHash,
		size:    fi.Size(),
		head:    hf,
		ck:      ck,
	}
	if set.fileRecords > 0 {
		j.segFirst, j.since = set.fileFirst.Seq, set.fileFirst.Time
	}
	if a := tail.active; a != nil {
		j.segFirst, j.since = a.Seq, a.Time
	}
	j.pend = make(map[string]uint64, len(res.open))
	j.redeeming = map[string]bool{}
	for call, a := range res.open {
		j.pend[call] = a.seq
	}
	if ix != nil {
		j.first = ix.id
	}
	hf = nil // owned by j: Close closes it
	// A journal from before head files, or whose head lags after a crash,
	// is tracked from here on.
	j.writeHead(j.seq, j.prev)
	go j.run()
	ctx := context.Background()
	if torn != nil {
		rec := Record{
			Tool:     "-",
			Decision: Recovered,
			By:       "journal",
			Reason: fmt.Sprintf("cut a torn final line %d (%d bytes, SHA-256 %s) left by a crash mid-write; its writer was never told it was durable",
				torn.Line, torn.Bytes, torn.tailHash),
		}
		if err := j.Append(ctx, rec); err != nil {
			j.Close()
			return nil, err
		}
	}
	for _, a := range res.unresolved() {
		if a.Decision == Redeeming {
			rec := Record{
				Call: a.Call, Tool: a.Tool, Principal: a.Principal, Session: a.Session,
				ArgsDigest: a.ArgsDigest, Summary: a.Summary, Decision: Refused, By: "journal",
				Reason: fmt.Sprintf("%s: the server began to spend this approval in its ledger (seq %d), and neither its approval record nor a refusal followed before the journal was reopened (the server stopped in between, or could not write); nothing ran, as a call runs only after its approval record; the approval may be spent: if the user still wants the call, it must be approved again",
					RedemptionInterrupted, a.Seq),
			}
			if err := j.Append(ctx, rec); err != nil {
				j.Close()
				return nil, err
			}
			continue
		}
		rec := Record{
			Call:       a.Call,
			Tool:       a.Tool,
			Principal:  a.Principal,
			Session:    a.Session,
			ArgsDigest: a.ArgsDigest,
			Summary:    a.Summary,
			Decision:   Ambiguous,
			By:         "journal",
			Reason: fmt.Sprintf("approved (%s, seq %d) but no executed or failed record followed before the journal was reopened: the server stopped during or before execute; not retried; it may or may not have run: check by hand",
				a.Decision, a.Seq),
		}
		if err := j.Append(ctx, rec); err != nil {
			j.Close()
			return nil, err
		}
	}
	return j, nil
}

// cutTail truncates the torn line away, keeping a hash of the removed bytes
// for the recovery record.
func cutTail(f *os.File, t *TornError) error {
	tail := make([]byte, t.Bytes)
	if _, err := f.ReadAt(tail, t.Offset); err != nil {
		return fmt.Errorf("journal: reading torn line %d: %w", t.Line, err)
	}
	t.tailHash = hashLine(tail)
	if err := f.Truncate(t.Offset); err != nil {
		return fmt.Errorf("journal: cutting torn line %d: %w", t.Line, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("journal: cutting torn line %d: %w", t.Line, err)
	}
	return nil
}

// tailStart is the seq from which Open reads the journal (see readTail),
// or 0 to read all of it: the head file's Open hint, the head itself, or
// the latest checkpoint, whichever is oldest.
func tailStart(head *Head, ck *checkpointer) uint64 {
	if head == nil || head.Open == 0 || head.Seq == 0 {
		return 0
	}
	start := min(head.Open, head.Seq)
	if ck != nil {
		var latest uint64
		for _, c := range ck.existing {
			latest = max(latest, c.Seq)
		}
		if latest > 0 {
			start = min(start, latest)
		}
	}
	return start
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Path returns the file the journal writes to.
func (j *Journal) Path() string { return j.path }

func (j *Journal) failure() error {
	j.errMu.Lock()
	defer j.errMu.Unlock()
	return j.broken
}

// Append writes r and returns once it is on disk (write and fsync); an
// outcome record (executed, failed) returns once written, its fsync joining
// the next commit, unless WithSyncOutcome(true). It fills in Seq, Prev and
// Time, redacts Args (see Redact), replaces string arguments over
// LongValueBytes by their SHA-256 and size unless WithKeepLongValues(true),
// and cuts the values of Args' sensitive
// fields out of Summary, Error and Reason wherever they appear (see
// FindSecrets); arguments
// longer than MaxArgsBytes (MaxRefusalArgsBytes for refusal-class records)
// are replaced by a note naming their size, args_digest standing for them.
// An error means the record must be treated as not written: the gate runs
// nothing. If ctx ends first Append returns an error though the record may
// still land.
//
// A failed write or fsync fails every record of its batch, and the file is
// cut back to the last durable record. The next Append tries again: once
// the disk has room, writing resumes on the same chain, after a
// journal-recovered record that says what was refused meanwhile, followed
// by the outcome records that could not be written at the time (each with
// a reason saying it is late). A refusal-class record past the size limit
// gets ErrRefusalsCapped.
//
// Append refuses, without touching the file or the journal's health, a
// record with no Tool, no or an unknown Decision, or an approval or outcome
// decision without a Call id (the id is what ties an outcome to its
// approval after a crash). Caller-set Seq, Prev and Time are overwritten.
func (j *Journal) Append(ctx context.Context, r Record) error {
	if err := checkRecord(&r); err != nil {
		return err
	}
	// Text the gate stores but did not write (an upstream's error, a
	// resolver's refusal) may echo an argument, as validation errors do:
	// the call's secret values are cut out of it as out of a plan.
	secrets := FindSecrets(r.Args, r.SecretFields)
	r.Summary, r.Error, r.Reason = secrets.Text(r.Summary), secrets.Text(r.Error), secrets.Text(r.Reason)
	r.Args = Redact(r.Args, r.SecretFields)
	if !j.opts.keepLong {
		r.Args = digestLongValues(r.Args, LongValueBytes)
	}
	r.SecretFields = nil
	limit, summary := MaxArgsBytes, maxSummary
	if refusalClass(r.Decision) {
		limit, summary = MaxRefusalArgsBytes, maxRefusalSummary
	}
	// A record over MaxLineBytes could not be written at all, and an
	// approval that cannot be written is a call that cannot run.
	r.Summary = clipUTF8(r.Summary, summary)
	r.Error = clipUTF8(r.Error, maxError)
	r.Reason = clipUTF8(r.Reason, maxError)
	if len(r.Args) > limit {
		note := fmt.Sprintf("[omitted: %d bytes of redacted arguments, over the %d-byte limit; see args_digest]", len(r.Args), limit)
		if r.ArgsDigest == "" {
			note = fmt.Sprintf("[omitted: %d bytes of redacted arguments, over the %d-byte limit; SHA-256 of the redacted copy %s]", len(r.Args), limit, hashLine(r.Args))
		}
		r.Args, _ = json.Marshal(note)
	}
	req := &request{ctx: ctx, rec: r, done: make(chan error, 1)}
	j.mu.RLock()
	if j.closed {
		j.mu.RUnlock()
		return ErrClosed
	}
	select {
	case j.reqs <- req:
	case <-ctx.Done():
		j.mu.RUnlock()
		return fmt.Errorf("journal: record not written: %w", ctx.Err())
	}
	j.mu.RUnlock()
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		select {
		case err := <-req.done:
			return err
		default:
		}
		return fmt.Errorf("journal: %w before the record was durable (it may still be written)", ctx.Err())
	}
}

// refusalClass reports the decisions anyone can cause without an approval.
func refusalClass(decision string) bool {
	switch decision {
	case Refused, Declined, Cancelled, Timeout:
		return true
	}
	return false
}

// clipUTF8 cuts s to at most max bytes on a rune boundary, marking the cut.
func clipUTF8(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func checkRecord(r *Record) error {
	switch r.Decision {
	case ClientAccepted, TokenRedeemed, ChannelApproved, PageApproved, CardAccepted, PolicyAutoApproved, GrantUsed, Executed, Failed, Ambiguous, Redeeming:
		// Without a Call the outcome cannot be tied to its approval, so a
		// crash could not be detected on restart.
		if r.Call == "" {
			return fmt.Errorf("journal: a %s record needs a Call id", r.Decision)
		}
	case Declined, Cancelled, Timeout, Refused, Recovered:
	case GrantCreated, GrantEnded:
		if r.Grant == "" {
			return fmt.Errorf("journal: a %s record needs a Grant id", r.Decision)
		}
	case "":
		return errors.New("journal: record without a decision")
	default:
		return fmt.Errorf("journal: unknown decision %q", r.Decision)
	}
	if r.Tool == "" {
		return errors.New("journal: record without a tool")
	}
	return nil
}

// Close stops the writer after the records already queued and closes the
// file. It returns the failure that broke the journal, if any.
func (j *Journal) Close() error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return ErrClosed
	}
	j.closed = true
	close(j.reqs)
	j.mu.Unlock()
	<-j.stopped
	herr := j.headErr
	if err := j.head.Sync(); err != nil && herr == nil {
		herr = fmt.Errorf("journal: head file: %w", err)
	}
	if err := j.head.Close(); err != nil && herr == nil {
		herr = fmt.Errorf("journal: head file: %w", err)
	}
	uerr := j.unlck()
	cerr := j.f.Close()
	return errors.Join(j.failure(), j.ck.failure(), herr, uerr, cerr, j.ck.close())
}

// run is the single writer: it takes every request queued while the last
// fsync ran and commits them with one write and one fsync (group commit).
func (j *Journal) run() {
	defer close(j.stopped)
	var tick, ageTick <-chan time.Time
	if j.ck != nil {
		t := time.NewTicker(j.ck.interval)
		defer t.Stop()
		tick = t.C
	}
	if age := j.opts.rotation.MaxAge; age > 0 {
		// An idle journal is sealed on age too, not only at its next record.
		t := time.NewTicker(min(age, time.Minute))
		defer t.Stop()
		ageTick = t.C
	}
	// Written outcomes wait this long at most for a commit to share
	// their fsync.
	deferred := time.NewTimer(time.Hour)
	deferred.Stop()
	defer deferred.Stop()
	waiting := false
	batch := make([]*request, 0, 64)
	for {
		var req *request
		select {
		case r, ok := <-j.reqs:
			if !ok {
				j.drained()
				return
			}
			req = r
		case <-deferred.C:
			waiting = false
			j.syncDeferred()
			continue
		case <-tick:
			j.syncDeferred()
			j.checkpoint()
			continue
		case <-ageTick:
			j.maybeRotate()
			continue
		}
		batch = append(batch[:0], req)
	drain:
		for len(batch) < j.opts.maxBatch {
			select {
			case r, ok := <-j.reqs:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		j.commit(batch)
		clear(batch)
		if j.ck != nil && j.seq-j.ck.lastSeq >= j.ck.every {
			j.syncDeferred() // a checkpoint signs only what is durable
			j.checkpoint()
		}
		j.maybeRotate()
		switch {
		case len(j.unsynced) > 0 && !waiting:
			deferred.Reset(j.opts.deferredSync)
			waiting = true
		case len(j.unsynced) == 0 && waiting:
			deferred.Stop()
			waiting = false
		}
	}
}

// drained runs once the queue is closed and empty.
func (j *Journal) drained() {
	j.syncDeferred()
	if j.outage != nil {
		// One last try, so that outcomes held back during an outage
		// that has since ended are not lost with the process.
		j.commit(nil)
	}
	// A cleanly closed journal has its head signed: nothing after the
	// last checkpoint can be rewritten unnoticed.
	j.checkpoint()
}

// commit writes one batch. After a failed write it first repairs the file
// (see repair) and puts in front of the batch the journal-recovered record
// and the outcomes the outage held back.
func (j *Journal) commit(batch []*request) {
	var pre []Record
	if o := j.outage; o != nil {
		// Repaired again even if it was when the write failed: the file
		// may have changed since, and this write must extend the chain.
		if err := j.repair(); err != nil {
			err = fmt.Errorf("journal: unusable until its end is repaired (%v) after: %w", err, o.err)
			j.setBroken(err)
			for _, r := range batch {
				o.lose(r.rec)
				r.done <- err
			}
			return
		}
		pre = o.records(j.seq)
	}
	if j.stuck != nil {
		for _, r := range batch {
			r.done <- j.stuck
		}
		return
	}
	buf := j.buf[:0]
	seq, prev, first := j.seq, j.prev, j.first
	var firstTime, stamped time.Time // the batch's first record's time; the last one encoded
	encode := func(rec *Record) ([]byte, error) {
		rec.Seq = seq + 1
		rec.Prev = prev
		rec.Time = j.opts.clock().UTC()
		stamped = rec.Time
		line, err := json.Marshal(rec)
		if err == nil && len(line) > MaxLineBytes {
			err = fmt.Errorf("record is %d bytes, over the %d-byte line limit", len(line), MaxLineBytes)
		}
		if err == nil && bytes.IndexByte(line, '\n') >= 0 {
			err = errors.New("encoded record contains a newline")
		}
		return line, err
	}
	add := func(line []byte) {
		if len(buf) == 0 {
			firstTime = stamped
		}
		sum := sha256.Sum256(line)
		prev = hex.EncodeToString(sum[:])
		seq++
		if seq == 1 {
			first = prev
		}
		buf = append(buf, line...)
		buf = append(buf, '\n')
	}
	wrote := j.wrote[:0] // the approvals and outcomes in buf, in order
	for i := range pre {
		line, err := encode(&pre[i])
		if err != nil {
			continue // our own records; a deferred outcome too long to write stays unwritten
		}
		add(line)
		wrote = append(wrote, &pre[i])
	}
	noted := false
	live := batch[:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.done <- fmt.Errorf("journal: record not written: %w", err)
			continue
		}
		line, err := encode(&r.rec)
		if err != nil {
			r.done <- fmt.Errorf("journal: record not written: %w", err)
			continue
		}
		if refusalClass(r.rec.Decision) && r.rec.Call == "" && j.size+int64(len(buf)+len(line)+1) > j.opts.maxBytes {
			if j.capNoted || noted {
				r.done <- ErrRefusalsCapped
				continue
			}
			// The first capped refusal leaves one note, so that a
			// reader of the journal knows refusals stop here.
			note := Record{Tool: "-", Decision: Refused, By: "journal", Reason: fmt.Sprintf(
				"size limit: the journal reached %d bytes (limit %d); later refused, declined, cancelled and timed-out calls are not recorded until it is rotated; approvals and outcomes still are",
				j.size+int64(len(buf)), j.opts.maxBytes)}
			if line, err = encode(&note); err != nil {
				r.done <- ErrRefusalsCapped
				continue
			}
			noted = true
			r.done <- ErrRefusalsCapped
			add(line)
			continue
		}
		add(line)
		live = append(live, r)
		wrote = append(wrote, &r.rec)
	}
	j.buf = buf
	defer func() { clear(wrote); j.wrote = wrote[:0] }()
	if len(buf) == 0 {
		return
	}
	// A batch of outcomes only is written now and fsync'd with the next
	// commit (WithSyncOutcome); anything else is fsync'd before its
	// callers hear of it, and with it every outcome written before.
	deferSync := !j.opts.syncOutcome && len(pre) == 0 && !noted
	for _, r := range live {
		deferSync = deferSync && deferrable(r.rec.Decision)
	}
	n, err := j.opts.write(j.f, buf)
	if err == nil && n != len(buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		err = fmt.Errorf("journal: write failed, record not durable: %w", err)
	} else if deferSync {
		// Not fsync'd: see below.
	} else if serr := j.opts.sync(j.f); serr != nil {
		// After a failed fsync the kernel may have dropped the dirty
		// pages: what this batch wrote cannot be trusted, so repair cuts
		// it away like a failed write.
		err = fmt.Errorf("journal: fsync failed, record not durable: %w", serr)
	}
	if err != nil {
		j.failed(err, live)
		return
	}
	if deferSync && len(j.unsynced) == 0 {
		// The chain as it is now is durable: a failed fsync comes back here.
		j.durSeq, j.durPrev, j.durFirst, j.durSize = j.seq, j.prev, j.first, j.size
	}
	if j.segFirst == 0 {
		j.segFirst, j.since = j.seq+1, firstTime
	}
	j.seq, j.prev, j.first = seq, prev, first
	j.size += int64(len(buf))
	j.capNoted = j.capNoted || noted
	if j.outage != nil {
		j.outage = nil
		j.setBroken(nil)
	}
	if deferSync {
		// Written, not durable: the head file (the last record the
		// journal vouches for) moves on only with the fsync.
		for _, r := range live {
			j.unsynced = append(j.unsynced, r.rec)
			r.done <- nil
		}
		return
	}
	j.settle(j.unsynced...)
	j.unsynced = j.unsynced[:0]
	for _, r := range wrote {
		j.settle(*r)
	}
	j.writeHead(seq, prev)
	for _, r := range live {
		r.done <- nil
	}
}

// settle updates pend for a record now durable, as a scan does (see
// scanResult.accept): an approval opens its call, an outcome closes it.
func (j *Journal) settle(recs ...Record) {
	for i := range recs {
		r := &recs[i]
		switch {
		case r.Call == "":
		case r.Decision == Redeeming:
			if _, ok := j.pend[r.Call]; !ok {
				j.pend[r.Call] = r.Seq
				j.redeeming[r.Call] = true
			}
		case approval(r.Decision):
			if _, ok := j.pend[r.Call]; !ok {
				j.pend[r.Call] = r.Seq
			}
			delete(j.redeeming, r.Call)
		case outcome(r.Decision):
			delete(j.pend, r.Call)
			delete(j.redeeming, r.Call)
		case refusalClass(r.Decision) && j.redeeming[r.Call]:
			delete(j.pend, r.Call)
			delete(j.redeeming, r.Call)
		}
	}
}

// deferrable reports the records whose fsync may join the next commit
// (WithSyncOutcome): the outcomes of calls that ran. Not ambiguous: the
// journal writes those itself, at Open and on shutdown.
func deferrable(decision string) bool {
	return decision == Executed || decision == Failed
}

// syncDeferred fsyncs the outcomes written since the last fsync, if any.
// A failure is an outage, as a failed commit is: the file is cut back to
// the last fsync and those outcomes are written again, late.
func (j *Journal) syncDeferred() error {
	if len(j.unsynced) == 0 {
		return nil
	}
	if err := j.opts.sync(j.f); err != nil {
		err = fmt.Errorf("journal: fsync failed, record not durable: %w", err)
		j.failed(err, nil)
		return err
	}
	j.settle(j.unsynced...)
	j.unsynced = j.unsynced[:0]
	j.writeHead(j.seq, j.prev)
	return nil
}

// failed starts or extends an outage: the batch's callers get err, the
// outcomes among their records are kept to be written late, and the file
// is cut back to its last durable record right away, so that a crash now
// leaves no half-written line behind.
func (j *Journal) failed(err error, live []*request) {
	o := j.outage
	if o == nil {
		o = &outage{err: err, since: j.opts.clock().UTC()}
		j.outage = o
	}
	if len(j.unsynced) > 0 {
		// Outcomes written but never fsync'd: after a failed fsync they
		// cannot be trusted to be on disk. Back to the last fsync; they
		// are written again, late.
		j.seq, j.prev, j.first, j.size = j.durSeq, j.durPrev, j.durFirst, j.durSize
		for _, r := range j.unsynced {
			o.lose(r)
		}
		j.unsynced = j.unsynced[:0]
	}
	for _, r := range live {
		o.lose(r.rec)
	}
	_ = j.repair() // best effort now; commit repairs again before the next write
	j.setBroken(err)
	for _, r := range live {
		r.done <- err
	}
}

func (j *Journal) setBroken(err error) {
	j.errMu.Lock()
	j.broken = err
	j.errMu.Unlock()
}

// repair cuts the file back to the bytes known durable and syncs it, then
// checks that the last line there is still the head of the chain. A write
// that failed midway (a full disk takes part of a batch) leaves a partial
// line, and after a failed fsync nothing past the last good one is known
// to be on disk.
func (j *Journal) repair() error {
	fi, err := j.f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() < j.size {
		return fmt.Errorf("the file shrank to %d bytes, below the %d bytes written", fi.Size(), j.size)
	}
	if fi.Size() > j.size {
		if err := j.f.Truncate(j.size); err != nil {
			return err
		}
	}
	if err := j.opts.sync(j.f); err != nil {
		return err
	}
	return checkTail(j.f, j.size, j.prev)
}

// checkTail checks that the line ending at size hashes to head.
func checkTail(f *os.File, size int64, head string) error {
	if size == 0 {
		if head != Genesis {
			return errors.New("the file is empty but the chain is not")
		}
		return nil
	}
	n := min(size, MaxLineBytes+1)
	tail := make([]byte, n)
	if _, err := f.ReadAt(tail, size-n); err != nil {
		return err
	}
	if tail[n-1] != '\n' {
		return errors.New("the last durable line lost its newline")
	}
	line := tail[:n-1]
	if i := bytes.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	if hashLine(line) != head {
		return errors.New("the last durable line is not the head of the chain")
	}
	return nil
}

// lose accounts for a record that was not written.
func (o *outage) lose(r Record) {
	switch {
	case approval(r.Decision):
		o.approvals++
	case outcome(r.Decision):
		if len(o.deferred) == maxDeferred {
			o.dropped++
			return
		}
		r.Reason = fmt.Sprintf("written late: the journal could not write this outcome when the call ended (%v)", o.err)
		o.deferred = append(o.deferred, r)
	default:
		o.others++
	}
}

// records are what goes in front of the first batch written after an
// outage: the note, then the outcomes held back.
func (o *outage) records(lastSeq uint64) []Record {
	reason := fmt.Sprintf("resumed after writes failed from %s (first failure: %v); not written meanwhile, their callers told so: %d approval record(s), whose calls did not run, and %d other record(s); %d outcome record(s) follow, written late",
		o.since.Format(time.RFC3339Nano), o.err, o.approvals, o.others, len(o.deferred))
	if o.dropped > 0 {
		reason += fmt.Sprintf("; %d more outcome record(s) were lost: their approvals are marked ambiguous when the journal is next opened", o.dropped)
	}
	reason += fmt.Sprintf("; the chain continues from seq %d", lastSeq)
	out := make([]Record, 0, 1+len(o.deferred))
	out = append(out, Record{Tool: "-", Decision: Recovered, By: "journal", Reason: reason})
	return append(out, o.deferred...)
}
