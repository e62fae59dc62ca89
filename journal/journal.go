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
)

// Recovered is the decision of the record Open appends after cutting away a
// torn final line, so the cut itself is part of the chain.
const Recovered = "journal-recovered"

// ErrClosed is returned by Append after Close.
var ErrClosed = errors.New("journal: closed")

// maxArgsBytes bounds the redacted argument copy; the digest still covers
// the full arguments.
const maxArgsBytes = 64 << 10

// Option configures Open.
type Option func(*options)

type options struct {
	clock    func() time.Time
	maxBatch int
	// fault hooks for tests: they stand in for the file's Write and Sync.
	write func(f *os.File, b []byte) (int, error)
	sync  func(f *os.File) error
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
	broken error // set once a write or fsync failed; never cleared

	// owned by the writer goroutine
	seq  uint64
	prev string
	buf  []byte
}

type request struct {
	ctx  context.Context
	rec  Record
	done chan error // buffered: the writer never blocks on a caller that left
}

// Open opens (creating if needed) the journal at path, verifies its chain
// and takes an exclusive lock on it. A torn final line is cut away and the
// cut recorded; any other damage refuses to open. Approvals left without an
// outcome by a previous process get an ambiguous record each.
func Open(path string, opts ...Option) (*Journal, error) {
	o := options{
		clock:    time.Now,
		maxBatch: 1024,
		write:    func(f *os.File, b []byte) (int, error) { return f.Write(b) },
		sync:     func(f *os.File) error { return f.Sync() },
	}
	for _, opt := range opts {
		opt(&o)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: creating %s: %w", dir, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	j, err := open(path, f, o)
	if err != nil {
		f.Close()
		return nil, err
	}
	return j, nil
}

func open(path string, f *os.File, o options) (*Journal, error) {
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
		return nil, fmt.Errorf("journal: %s is in use by another process: %w", path, err)
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
	res, verr := scan(f, nil)
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
	j := &Journal{
		path:    path,
		f:       f,
		opts:    o,
		unlck:   unlock,
		reqs:    make(chan *request, 1024),
		stopped: make(chan struct{}),
		seq:     res.sum.LastSeq,
		prev:    res.sum.LastHash,
	}
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

// Append writes r and returns once it is on disk (write and fsync). It
// fills in Seq, Prev and Time, redacts Args (see Redact). An
// error means the record must be treated as not written: the gate runs
// nothing. If ctx ends first Append returns an error though the record may
// still land.
//
// Append refuses, without touching the file or the journal's health, a
// record with no Tool, no or an unknown Decision, or an approval or outcome
// decision without a Call id (the id is what ties an outcome to its
// approval after a crash). Caller-set Seq, Prev and Time are overwritten.
func (j *Journal) Append(ctx context.Context, r Record) error {
	if err := checkRecord(&r); err != nil {
		return err
	}
	r.Args = Redact(r.Args, r.SecretFields)
	if len(r.Args) > maxArgsBytes {
		r.Args = json.RawMessage(fmt.Sprintf(`"[omitted: %d bytes of redacted arguments; see args_digest]"`, len(r.Args)))
	}
	r.SecretFields = nil
	if err := j.failure(); err != nil {
		return err
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

func checkRecord(r *Record) error {
	switch r.Decision {
	case ClientAccepted, TokenRedeemed, ChannelApproved, PolicyAutoApproved, Executed, Failed, Ambiguous:
		// Without a Call the outcome cannot be tied to its approval, so a
		// crash could not be detected on restart.
		if r.Call == "" {
			return fmt.Errorf("journal: a %s record needs a Call id", r.Decision)
		}
	case Declined, Cancelled, Timeout, Refused, Recovered:
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
	uerr := j.unlck()
	cerr := j.f.Close()
	return errors.Join(j.failure(), uerr, cerr)
}

// run is the single writer: it takes every request queued while the last
// fsync ran and commits them with one write and one fsync (group commit).
func (j *Journal) run() {
	defer close(j.stopped)
	batch := make([]*request, 0, 64)
	for req := range j.reqs {
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
	}
}

func (j *Journal) commit(batch []*request) {
	if err := j.failure(); err != nil {
		for _, r := range batch {
			r.done <- err
		}
		return
	}
	buf := j.buf[:0]
	seq, prev := j.seq, j.prev
	live := batch[:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.done <- fmt.Errorf("journal: record not written: %w", err)
			continue
		}
		r.rec.Seq = seq + 1
		r.rec.Prev = prev
		r.rec.Time = j.opts.clock().UTC()
		line, err := json.Marshal(&r.rec)
		if err == nil && len(line) > MaxLineBytes {
			err = fmt.Errorf("record is %d bytes, over the %d-byte line limit", len(line), MaxLineBytes)
		}
		if err == nil && bytes.IndexByte(line, '\n') >= 0 {
			err = errors.New("encoded record contains a newline")
		}
		if err != nil {
			r.done <- fmt.Errorf("journal: record not written: %w", err)
			continue
		}
		sum := sha256.Sum256(line)
		prev = hex.EncodeToString(sum[:])
		seq++
		buf = append(buf, line...)
		buf = append(buf, '\n')
		live = append(live, r)
	}
	j.buf = buf
	if len(live) == 0 {
		return
	}
	n, err := j.opts.write(j.f, buf)
	if err == nil && n != len(buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		err = fmt.Errorf("journal: write failed, journal unusable from now on: %w", err)
	} else if serr := j.opts.sync(j.f); serr != nil {
		// After a failed fsync the kernel may have dropped the dirty pages:
		// nothing about the file's content can be trusted any more.
		err = fmt.Errorf("journal: fsync failed, journal unusable from now on: %w", serr)
	}
	if err != nil {
		j.errMu.Lock()
		j.broken = err
		j.errMu.Unlock()
		for _, r := range live {
			r.done <- err
		}
		return
	}
	j.seq, j.prev = seq, prev
	for _, r := range live {
		r.done <- nil
	}
}
