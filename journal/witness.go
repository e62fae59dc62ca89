package journal

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mcpsafe/mcpsafe/internal/loopback"
	"golang.org/x/mod/sumdb/note"
)

// An HTTP witness keeps a copy of every checkpoint on a machine the
// journal's host cannot write. Whoever controls the journal's directory
// can rewrite the journal and its local checkpoint file (deleting the
// checkpoints it cannot re-sign); it cannot take back what the witness
// already holds, and `journal verify --witness-url` compares the journal
// with that.
//
// Sending is asynchronous: checkpoint() queues the signed note and a
// sender goroutine delivers it, retrying with backoff. A witness that is
// down or slow never delays or refuses a record (the journal's own
// durability does not depend on it); it shows in WitnessHealth (and the
// "witness" health gauge of package metrics) and in the log, and records
// written meanwhile are covered once a later checkpoint gets through.

// Defaults and bounds of the witness client.
const (
	// DefaultWitnessCloseWait is how long Close tries to deliver the last
	// checkpoints (Checkpoints.WitnessCloseWait).
	DefaultWitnessCloseWait = 5 * time.Second
	// MaxCheckpointNote bounds one signed checkpoint note, as sent to a
	// witness (a real one is about 250 bytes).
	MaxCheckpointNote = 4 << 10
	// maxWitnessAnswer bounds what verify reads from a witness.
	maxWitnessAnswer  = 64 << 20
	witnessQueueLen   = 64
	witnessMinBackoff = 200 * time.Millisecond
	witnessMaxBackoff = 30 * time.Second
	witnessTimeout    = 10 * time.Second
)

// WitnessCheckpointsPath is the witness's route, under its base URL:
// POST a signed note to it; GET WitnessCheckpointsPath/JOURNAL-ID for the
// notes held for one journal.
const WitnessCheckpointsPath = "/checkpoints"

// OpenCheckpoint checks that msg is a note signed by exactly one of keys,
// and by nothing else, and only then parses it as a checkpoint. The
// checkpoint's Key is the name of the key that signed it.
func OpenCheckpoint(msg []byte, keys ...note.Verifier) (Checkpoint, error) {
	if len(msg) > MaxCheckpointNote {
		return Checkpoint{}, &CheckpointError{Kind: CheckpointMalformed, Reason: fmt.Sprintf("%d bytes, over the %d-byte limit of a checkpoint", len(msg), MaxCheckpointNote)}
	}
	n, err := note.Open(msg, note.VerifierList(keys...))
	if err != nil {
		return Checkpoint{}, &CheckpointError{Kind: CheckpointBadSignature, Reason: fmt.Sprintf("not a note signed by a trusted key: %v", err)}
	}
	if len(n.Sigs) != 1 || len(n.UnverifiedSigs) != 0 {
		return Checkpoint{}, &CheckpointError{Kind: CheckpointBadSignature, Reason: fmt.Sprintf("a checkpoint carries exactly one signature, this one %d", len(n.Sigs)+len(n.UnverifiedSigs))}
	}
	c, err := parseCheckpointText(n.Text)
	if err != nil {
		return Checkpoint{}, &CheckpointError{Kind: CheckpointMalformed, Reason: err.Error()}
	}
	c.Key = n.Sigs[0].Name
	return c, nil
}

// LoadWitnessToken reads a bearer token file: one token, the file private
// to its owner.
func LoadWitnessToken(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("journal: witness token: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("journal: witness token %s is readable by group or others (mode %v); chmod 600 it", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("journal: witness token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" || strings.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("journal: witness token %s must hold one token on one line", path)
	}
	return tok, nil
}

// checkWitnessURL accepts https, and http only to this host: the bearer
// token must not cross a network in clear.
func checkWitnessURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("journal: witness URL: %w", err)
	}
	switch {
	case u.Scheme == "https" && u.Host != "":
	case u.Scheme == "http" && loopback.Host(u.Hostname()):
	default:
		return nil, fmt.Errorf("journal: witness URL %q: use https:// (http:// only to localhost)", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("journal: witness URL %q: no query, fragment or user info", raw)
	}
	return u, nil
}

func newWitnessHTTPClient() *http.Client {
	return &http.Client{
		Timeout: witnessTimeout,
		// A redirect would be a witness we did not name.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// witnessSender delivers checkpoints to an HTTP witness in the background.
type witnessSender struct {
	post      string // the URL checkpoints are POSTed to
	token     string
	client    *http.Client
	log       *slog.Logger
	closeWait time.Duration

	ctx    context.Context // cancelled when Close's bound runs out
	cancel context.CancelFunc
	wake   chan struct{} // a new checkpoint was queued
	finish chan struct{} // closed by close: deliver what is queued, then stop
	done   chan struct{} // closed when run returns

	mu      sync.Mutex
	queue   []queued // oldest first; queue[0] is the one being sent
	next    uint64
	dropped int
	err     error // the last failed delivery, nil after one succeeds
	refused error // the last checkpoint the witness refused (sticky)
}

type queued struct {
	id  uint64
	seq uint64
	msg []byte
}

func newWitnessSender(c Checkpoints) (*witnessSender, error) {
	u, err := checkWitnessURL(c.WitnessURL)
	if err != nil {
		return nil, err
	}
	if c.WitnessTokenFile == "" {
		return nil, errors.New("journal: a witness URL needs a token file")
	}
	tok, err := LoadWitnessToken(c.WitnessTokenFile)
	if err != nil {
		return nil, err
	}
	s := &witnessSender{
		post:      u.JoinPath(WitnessCheckpointsPath).String(),
		token:     tok,
		client:    newWitnessHTTPClient(),
		log:       c.Logger,
		closeWait: c.WitnessCloseWait,
		wake:      make(chan struct{}, 1),
		finish:    make(chan struct{}),
		done:      make(chan struct{}),
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.closeWait <= 0 {
		s.closeWait = DefaultWitnessCloseWait
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	go s.run()
	return s, nil
}

// send queues a signed checkpoint and returns at once. A full queue drops
// its oldest entry: every checkpoint covers all the records before it, so
// the newest ones matter most.
func (s *witnessSender) send(seq uint64, msg []byte) {
	if s == nil {
		return
	}
	s.mu.Lock()
	if len(s.queue) == witnessQueueLen {
		s.queue = s.queue[1:]
		s.dropped++
		s.log.Warn("journal: witness queue full; dropped the oldest checkpoint (later ones cover its records)", "witness", s.post, "dropped", s.dropped)
	}
	s.next++
	s.queue = append(s.queue, queued{id: s.next, seq: seq, msg: msg})
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *witnessSender) front() (queued, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return queued{}, false
	}
	return s.queue[0], true
}

func (s *witnessSender) run() {
	defer close(s.done)
	backoff := witnessMinBackoff
	finish := s.finish
	for {
		it, ok := s.front()
		if !ok {
			if s.closing() {
				return // all delivered (or refused)
			}
			select {
			case <-s.wake:
			case <-s.finish:
			case <-s.ctx.Done():
				return
			}
			continue
		}
		err, permanent := s.deliver(it)
		if err == nil || permanent {
			backoff = witnessMinBackoff
			continue
		}
		select {
		case <-time.After(backoff):
		case <-finish:
			// Close: one prompt try of what is left, then the usual
			// backoff, all within Close's bound.
			finish = nil
			backoff = witnessMinBackoff
			continue
		case <-s.ctx.Done():
			return
		}
		backoff = min(backoff*2, witnessMaxBackoff)
	}
}

func (s *witnessSender) closing() bool {
	select {
	case <-s.finish:
		return true
	default:
		return false
	}
}

// deliver POSTs one checkpoint. permanent says the witness refused it (a
// fork, a rollback, a key it does not trust): retrying cannot help.
func (s *witnessSender) deliver(it queued) (err error, permanent bool) {
	err, permanent = s.postNote(it.msg)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil || permanent {
		if len(s.queue) > 0 && s.queue[0].id == it.id {
			s.queue = s.queue[1:]
		}
	}
	switch {
	case err == nil:
		if s.err != nil {
			s.log.Info("journal: witness reachable again", "witness", s.post, "seq", it.seq)
		}
		s.err = nil
	case permanent:
		s.refused = fmt.Errorf("journal: the witness %s refused checkpoint seq %d: %w", s.post, it.seq, err)
		s.err = s.refused
		s.log.Error("journal: the witness refused a checkpoint; if it reports a fork or rollback, this journal contradicts one it already witnessed", "witness", s.post, "seq", it.seq, "err", err)
	case s.ctx.Err() != nil && s.err != nil:
		// Close's bound ran out with this request in flight: "context
		// canceled" says nothing of the witness; Close reports what it
		// last answered.
	default:
		if s.err == nil || s.err.Error() != err.Error() {
			s.log.Warn("journal: cannot deliver checkpoints to the witness; the journal keeps working and retries", "witness", s.post, "seq", it.seq, "err", err)
		}
		s.err = err
	}
	return err, permanent
}

func (s *witnessSender) postNote(msg []byte) (err error, permanent bool) {
	req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, s.post, bytes.NewReader(msg))
	if err != nil {
		return err, true
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	resp, err := s.client.Do(req)
	if err != nil {
		return err, false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	switch {
	case resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusCreated:
		return nil, false
	case resp.StatusCode == http.StatusConflict || resp.StatusCode == http.StatusForbidden ||
		resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusRequestEntityTooLarge:
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body))), true
	default:
		// 401 too: a token being fixed on the witness's side.
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body))), false
	}
}

// close gives the sender up to closeWait to deliver what is queued, and
// says what did not get through.
func (s *witnessSender) close() error {
	if s == nil {
		return nil
	}
	close(s.finish)
	t := time.AfterFunc(s.closeWait, s.cancel)
	<-s.done
	t.Stop()
	s.cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	if n := len(s.queue); n > 0 {
		errs = append(errs, fmt.Errorf("journal: %d checkpoint(s), the last for seq %d, not delivered to the witness %s within %s: %v",
			n, s.queue[n-1].seq, s.post, s.closeWait, s.err))
	}
	if s.refused != nil {
		errs = append(errs, s.refused)
	}
	return errors.Join(errs...)
}

func (s *witnessSender) health() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// WitnessHealth is the failure of the last delivery to the HTTP witness
// (Checkpoints.WitnessURL), or of the checkpoint it refused, or nil.
func (j *Journal) WitnessHealth() error {
	if j.ck == nil {
		return nil
	}
	return j.ck.sender.health()
}

// WitnessClient reads what an HTTP witness holds (journal verify).
type WitnessClient struct {
	URL   string // the witness's base URL
	Token string
	HTTP  *http.Client // nil: a client with a timeout that follows no redirect
}

// Checkpoints fetches the checkpoints the witness holds for the journal
// whose first line hashes to id, checking every signature with key: the
// witness is trusted to keep them, not to produce them.
func (w *WitnessClient) Checkpoints(ctx context.Context, id string, key note.Verifier) ([]Checkpoint, error) {
	u, err := checkWitnessURL(w.URL)
	if err != nil {
		return nil, err
	}
	if !isHash(id) {
		return nil, fmt.Errorf("journal: %q is not a journal id", id)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.JoinPath(WitnessCheckpointsPath, id).String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+w.Token)
	hc := w.HTTP
	if hc == nil {
		hc = newWitnessHTTPClient()
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("journal: witness %s: %w", w.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxWitnessAnswer+1))
	if err != nil {
		return nil, fmt.Errorf("journal: witness %s: %w", w.URL, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("journal: witness %s answered %s: %s", w.URL, resp.Status, strings.TrimSpace(string(body[:min(len(body), 512)])))
	}
	if len(body) > maxWitnessAnswer {
		return nil, fmt.Errorf("journal: witness %s: answer over %d bytes", w.URL, maxWitnessAnswer)
	}
	cps, torn, err := ReadCheckpoints(bytes.NewReader(body), key)
	if err != nil {
		return nil, fmt.Errorf("journal: witness %s: %w", w.URL, err)
	}
	if torn >= 0 {
		return nil, &CheckpointError{Kind: CheckpointMalformed, Reason: fmt.Sprintf("the witness %s answered a checkpoint cut short", w.URL)}
	}
	for _, c := range cps {
		if c.Journal != id {
			return nil, &CheckpointError{Kind: CheckpointOtherJournal, Reason: fmt.Sprintf("the witness %s answered a checkpoint of journal %s when asked for %s", w.URL, c.Journal, id)}
		}
	}
	return cps, nil
}

// WitnessedJournal is one journal a witness holds checkpoints of, as its
// list says (unsigned: a hint to look further, not evidence).
type WitnessedJournal struct {
	Journal    string    `json:"journal"`
	Key        string    `json:"key"`
	LatestSeq  uint64    `json:"latest_seq"`
	LatestTime time.Time `json:"latest_time"`
	Refused    int       `json:"refused"`
	// Thinned counts the older checkpoints the witness dropped, since it
	// started, to keep the journal under its per-journal limit.
	Thinned int `json:"thinned"`
}

// Journals lists the journals the witness holds checkpoints of.
func (w *WitnessClient) Journals(ctx context.Context) ([]WitnessedJournal, error) {
	u, err := checkWitnessURL(w.URL)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.JoinPath(WitnessCheckpointsPath).String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+w.Token)
	hc := w.HTTP
	if hc == nil {
		hc = newWitnessHTTPClient()
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("journal: witness %s: %w", w.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("journal: witness %s answered %s", w.URL, resp.Status)
	}
	var out struct {
		Journals []WitnessedJournal `json:"journals"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxWitnessAnswer)).Decode(&out); err != nil {
		return nil, fmt.Errorf("journal: witness %s: list: %w", w.URL, err)
	}
	return out.Journals, nil
}

// JournalID is the id checkpoints give the journal at path: the SHA-256
// of its first line; "" while it has no complete line.
func JournalID(path string) (string, error) {
	files, err := SetFiles(path)
	if err != nil {
		return "", err
	}
	// Line 1 is in the oldest file of a rotated set; a set whose oldest
	// segment holds a later seq was pruned and has no line 1 ("").
	if segs, _ := Segments(path); len(segs) > 0 && segs[0].First != 1 {
		return "", nil
	}
	f, err := os.Open(files[0])
	if err != nil {
		return "", fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, MaxLineBytes+1)
	line, err := br.ReadSlice('\n')
	switch {
	case err == nil:
		return hashLine(line[:len(line)-1]), nil
	case err == io.EOF || err == bufio.ErrBufferFull:
		return "", nil // verify reports the damage
	default:
		return "", fmt.Errorf("journal: %w", err)
	}
}

// WitnessReport is what a verify against an HTTP witness found there.
type WitnessReport struct {
	URL         string
	Checkpoints int
	Latest      Checkpoint // the witnessed checkpoint with the highest seq
	// Others are the other journals the witness holds checkpoints of
	// signed by the same key. A journal whose first line was rewritten is
	// a new journal to the witness: the one it replaced shows here.
	Others []WitnessedJournal
	// Thinned is how many older checkpoints of this journal the witness
	// dropped (since it started) to stay under its per-journal limit: it
	// keeps the latest and a sparse older history.
	Thinned int
}

// String is what `mcpsafe journal verify --witness-url` adds.
func (r WitnessReport) String() string {
	s := fmt.Sprintf("witnessed: %d checkpoint(s) held by %s agree with the chain; latest seq %d at %s",
		r.Checkpoints, r.URL, r.Latest.Seq, r.Latest.Time.UTC().Format(time.RFC3339))
	if r.Thinned > 0 {
		s += fmt.Sprintf("\nnote: the witness thinned %d older checkpoint(s) of this journal to stay under its per-journal limit; it keeps the latest and a sparse history before it", r.Thinned)
	}
	if len(r.Others) > 0 {
		s += fmt.Sprintf("\nnote: the witness also holds %d other journal(s) signed by %s; if this journal is meant to continue one of them, it was replaced:", len(r.Others), r.Latest.Key)
		for _, o := range r.Others {
			s += fmt.Sprintf("\n  journal %s: latest seq %d at %s", o.Journal, o.LatestSeq, o.LatestTime.UTC().Format(time.RFC3339))
			if o.Refused > 0 {
				s += fmt.Sprintf(", %d checkpoint(s) refused as contradicting it", o.Refused)
			}
		}
	}
	return s
}

// VerifyWitnessed is VerifySigned with the checkpoints an HTTP witness
// holds for the journal added to those of files: a journal rewritten or
// cut behind a checkpoint the witness holds fails, whatever the local
// checkpoint files say. With no files, CheckpointsPath(path) is read if it
// exists: the witness is the copy that counts. A journal with records of
// which the witness holds no checkpoint fails (CheckpointMissing): a
// rewritten first line gives the journal a new id, unknown to the witness.
func VerifyWitnessed(ctx context.Context, path string, key note.Verifier, w *WitnessClient, files []string, opts ...SetOption) (Summary, CheckpointReport, WitnessReport, error) {
	wr := WitnessReport{URL: w.URL}
	if len(files) == 0 {
		if _, err := os.Stat(CheckpointsPath(path)); err == nil {
			files = []string{CheckpointsPath(path)}
		}
	}
	all, torn, err := readCheckpointFiles(key, files)
	if err != nil {
		return Summary{}, CheckpointReport{}, wr, err
	}
	id, err := JournalID(path)
	if err != nil {
		return Summary{}, CheckpointReport{}, wr, err
	}
	if id == "" {
		// A pruned set has lost its line 1: its identity is the one its
		// own checkpoints name, if they agree (verify then checks them).
		for _, c := range all {
			if id != "" && c.Journal != id {
				id = ""
				break
			}
			id = c.Journal
		}
	}
	var witnessed []Checkpoint
	if id != "" {
		if witnessed, err = w.Checkpoints(ctx, id, key); err != nil {
			return Summary{}, CheckpointReport{}, wr, err
		}
	}
	for _, c := range witnessed {
		if c.Seq >= wr.Latest.Seq {
			wr.Latest = c
		}
	}
	wr.Checkpoints = len(witnessed)
	from := strings.Join(append(files, w.URL), ", ")
	sum, rep, err := verifySetAgainst(path, append(all, witnessed...), torn, from, opts...)
	if err != nil {
		return sum, rep, wr, err
	}
	if sum.Records > 0 && wr.Checkpoints == 0 {
		return sum, rep, wr, &CheckpointError{Kind: CheckpointMissing, Reason: fmt.Sprintf(
			"the witness %s holds no checkpoint of this journal (id %s, %d records): none reached it yet, or the journal's first line was rewritten", w.URL, id, sum.Records)}
	}
	if wr.Checkpoints > 0 {
		list, err := w.Journals(ctx)
		if err != nil {
			return sum, rep, wr, err
		}
		for _, o := range list {
			if o.Journal == id {
				wr.Thinned = o.Thinned
			}
			if o.Journal != id && o.Key == wr.Latest.Key {
				wr.Others = append(wr.Others, o)
			}
		}
	}
	return sum, rep, wr, nil
}
