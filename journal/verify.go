package journal

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
)

// Genesis is the prev value of the first record: the SHA-256 of the empty
// string, as if an empty line preceded the journal. It is a constant rather
// than something random so that any verifier can check line 1 with no other
// input.
var Genesis = hashLine(nil)

// MaxLineBytes bounds one journal line. Append refuses larger records and
// Verify treats a longer line as damage, so a crafted file cannot make a
// verifier allocate without bound.
const MaxLineBytes = 1 << 20

// Summary describes a verified journal (or its verified prefix when Verify
// returns an error).
type Summary struct {
	Records  int
	LastSeq  uint64
	LastHash string // hash of the last line: anchor it elsewhere; Genesis when empty
	// Ambiguous counts ambiguous records: calls a person has to check.
	Ambiguous int
	// Unresolved counts approvals not (yet) followed by an outcome record,
	// and redemptions by neither an approval nor a refusal: calls in
	// flight, or calls that Open will mark ambiguous (an approval) or
	// refused (a redemption, on which nothing ran).
	Unresolved  int
	First, Last time.Time
	// HeadSeq is the seq the journal's head file recorded and the chain
	// was checked against; 0 when there was no head file.
	HeadSeq uint64
	// FirstSeq is the seq of the first record: 1, or more when the oldest
	// segments of a rotated journal were pruned (AllowPruned); 0 when empty.
	FirstSeq uint64
	// Base is the prev of the first record: Genesis, or for a pruned set
	// the hash of the last record pruned.
	Base string
	// Files counts the files read: sealed segments and the active file.
	Files int
}

// TamperError says a line was edited, removed, reordered, duplicated or
// inserted: something a crash cannot produce.
type TamperError struct {
	// File names the file of a rotated journal the line is in (a sealed
	// segment or the active file); empty for a journal that never rotated.
	File   string
	Line   int // 1-based, within File
	Reason string

	ord int // 1-based position in the whole set
}

func (e *TamperError) Error() string {
	if e.File != "" {
		return fmt.Sprintf("journal: %s: line %d: tampered: %s", e.File, e.Line, e.Reason)
	}
	return fmt.Sprintf("journal: line %d: tampered: %s", e.Line, e.Reason)
}

// TornError says only the final line is incomplete, as left by a crash in
// the middle of a write. The lines before it verified.
type TornError struct {
	File   string // as in TamperError
	Line   int    // 1-based
	Offset int64
	Bytes  int
	Reason string

	tailHash string // SHA-256 of the cut bytes, set when Open cuts them
}

func (e *TornError) Error() string {
	if e.File != "" {
		return fmt.Sprintf("journal: %s: line %d: torn (incomplete final line, %d bytes, as a crash mid-write leaves): %s", e.File, e.Line, e.Bytes, e.Reason)
	}
	return fmt.Sprintf("journal: line %d: torn (incomplete final line, %d bytes, as a crash mid-write leaves): %s", e.Line, e.Bytes, e.Reason)
}

func hashLine(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Verify reads a whole journal and checks the chain: every line is one JSON
// record, seq counts up from 1 without gaps, and each prev is the SHA-256 of
// the previous line's exact bytes. The first problem ends the check; the
// Summary then covers the lines before it.
func Verify(r io.Reader) (Summary, error) {
	res, err := scan(r, nil)
	return res.sum, err
}

// VerifyFile is Verify on the journal at path, also held against its head
// file (see HeadSuffix): an edited last line or lines removed from the end
// are reported as tampering. A rotated journal is verified as a whole: its
// sealed segments in order, then path (see Segments); an error names the
// file it is in.
func VerifyFile(path string, opts ...SetOption) (Summary, error) {
	head, err := ReadHead(path)
	if err != nil {
		return Summary{}, err
	}
	s, err := readSet(path, nil, head, setOpts(opts), nil)
	if s == nil {
		return Summary{}, err
	}
	return s.res.sum, err
}

// approval reports whether a decision lets a call run.
func approval(decision string) bool {
	switch decision {
	case ClientAccepted, TokenRedeemed, ChannelApproved, PageApproved, CardAccepted, PolicyAutoApproved, GrantUsed:
		return true
	}
	return false
}

// outcome reports whether a decision closes an approved call.
func outcome(decision string) bool {
	switch decision {
	case Executed, Failed, Ambiguous:
		return true
	}
	return false
}

type scanResult struct {
	sum  Summary
	size int64 // bytes of the verified lines
	// open holds the approvals without an outcome, by call, and nothing
	// else: what a scan keeps grows with the calls in flight, never with
	// the journal's length.
	open     map[string]openApproval
	opened   int // approvals opened so far: their order
	tornLine []byte
}

// openApproval is an approval waiting for its outcome, with its place in
// the journal (the first approval of its call).
type openApproval struct {
	ord int
	seq uint64 // of the call's first approval still open
	rec Record
}

// lineReader reads lines of at most MaxLineBytes, reporting whether each
// ended in a newline and whether it was the last.
type lineReader struct {
	br  *bufio.Reader
	buf []byte
}

func (lr *lineReader) next() (line []byte, complete, last, tooLong bool, err error) {
	lr.buf = lr.buf[:0]
	for {
		chunk, rerr := lr.br.ReadSlice('\n')
		if len(lr.buf)+len(chunk) > MaxLineBytes+1 {
			return nil, false, false, true, nil
		}
		lr.buf = append(lr.buf, chunk...)
		if rerr == bufio.ErrBufferFull {
			continue
		}
		if rerr == io.EOF {
			if len(lr.buf) == 0 {
				return nil, false, false, false, io.EOF
			}
			return lr.buf, false, true, false, nil
		}
		if rerr != nil {
			return nil, false, false, false, rerr
		}
		_, perr := lr.br.Peek(1)
		if perr != nil && perr != io.EOF {
			return nil, false, false, false, perr
		}
		return lr.buf[:len(lr.buf)-1], true, perr == io.EOF, false, nil
	}
}

// parseLine decodes one line strictly: a single JSON object and nothing
// after it (json.Unmarshal refuses anything but white space after the
// value). The line is decoded in place: no decoder, no buffer, no copy.
func parseLine(line []byte) (Record, error) {
	if t := bytes.TrimLeft(line, " \t\r"); len(t) == 0 || t[0] != '{' {
		return Record{}, errors.New("not a JSON object")
	}
	var rec Record
	if err := json.Unmarshal(line, &rec); err != nil {
		return Record{}, err
	}
	return rec, nil
}

// pendingLink is a line whose prev did not match the line before it. Which
// of the two was edited is decided by the line after it: if that one still
// chains to it, the earlier line's content changed; otherwise this line did.
type pendingLink struct {
	line int
	seq  uint64
	hash string
	at   pos
}

// scan verifies r and calls each (if not nil) for each verified record.
func scan(r io.Reader, each func(ord int, rec *Record)) (scanResult, error) {
	return scanHead(r, nil, each)
}

// scanHead is scan that also holds the chain against the head the writer
// recorded (nil: none): the line at the head's seq must have the head's
// hash, and the journal must reach that seq.
func scanHead(r io.Reader, head *Head, each func(ord int, rec *Record)) (scanResult, error) {
	s := newSetScan(head, each)
	err := s.file(r, 0, false)
	if err == nil {
		err = s.finish()
	}
	s.res.sum.Files = 1
	return s.res, err
}

func (res *scanResult) accept(n int, rec *Record, h string, size int64) {
	s := &res.sum
	if s.Records == 0 {
		s.First = rec.Time
		s.FirstSeq = rec.Seq
		s.Base = rec.Prev
	}
	s.Records++
	s.LastSeq = rec.Seq
	s.LastHash = h
	s.Last = rec.Time
	res.size += size
	if rec.Decision == Ambiguous {
		s.Ambiguous++
	}
	switch {
	case (approval(rec.Decision) || rec.Decision == Redeeming) && rec.Call != "":
		if res.open == nil {
			res.open = map[string]openApproval{}
		}
		a, ok := res.open[rec.Call]
		if !ok {
			res.opened++
			a.ord, a.seq = res.opened, rec.Seq
		}
		if ok && rec.Decision == Redeeming {
			break // (an approval's redemption again: it stays open as it was)
		}
		a.rec = *rec
		res.open[rec.Call] = a
	case outcome(rec.Decision) && rec.Call != "":
		delete(res.open, rec.Call)
	case refusalClass(rec.Decision) && rec.Call != "" && res.open[rec.Call].rec.Decision == Redeeming:
		// A redemption that ended in a refusal: nothing ran.
		delete(res.open, rec.Call)
	}
	s.Unresolved = len(res.open)
}

// unresolved returns the approvals still waiting for an outcome, in
// journal order.
func (res *scanResult) unresolved() []Record {
	open := make([]openApproval, 0, len(res.open))
	for _, a := range res.open {
		open = append(open, a)
	}
	slices.SortFunc(open, func(a, b openApproval) int { return cmp.Compare(a.ord, b.ord) })
	out := make([]Record, len(open))
	for i, a := range open {
		out[i] = a.rec
	}
	return out
}

// String is the one-line summary `mcpsafe journal verify` prints.
func (s Summary) String() string {
	if s.Records == 0 {
		return "intact: empty journal"
	}
	head := "no head file, so an edit to the last record would not show"
	if s.HeadSeq > 0 {
		head = fmt.Sprintf("matches its head file (seq %d)", s.HeadSeq)
	}
	files := ""
	if s.Files > 1 {
		files = fmt.Sprintf(" in %d files (%d sealed segment(s) and the active file)", s.Files, s.Files-1)
	}
	out := fmt.Sprintf("intact: %d records, seq %d..%d%s, %s to %s, %d ambiguous, %d approved without outcome; last hash %s; %s",
		s.Records, s.FirstSeq, s.LastSeq, files, s.First.UTC().Format(time.RFC3339), s.Last.UTC().Format(time.RFC3339),
		s.Ambiguous, s.Unresolved, s.LastHash, head)
	if s.FirstSeq > 1 {
		out += fmt.Sprintf("; PRUNED: seq 1..%d are not in the set (their segments were deleted), so nothing here proves what they held; the first record links to hash %s", s.FirstSeq-1, s.Base)
	}
	return out
}
