package journal

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
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
	// Unresolved counts approvals not (yet) followed by an outcome record:
	// calls in flight, or calls that Open will mark ambiguous.
	Unresolved  int
	First, Last time.Time
	// HeadSeq is the seq the journal's head file recorded and the chain
	// was checked against; 0 when there was no head file.
	HeadSeq uint64
}

// TamperError says a line was edited, removed, reordered, duplicated or
// inserted: something a crash cannot produce.
type TamperError struct {
	Line   int // 1-based
	Reason string
}

func (e *TamperError) Error() string {
	return fmt.Sprintf("journal: line %d: tampered: %s", e.Line, e.Reason)
}

// TornError says only the final line is incomplete, as left by a crash in
// the middle of a write. The lines before it verified.
type TornError struct {
	Line   int // 1-based
	Offset int64
	Bytes  int
	Reason string

	tailHash string // SHA-256 of the cut bytes, set when Open cuts them
}

func (e *TornError) Error() string {
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

// VerifyFile is Verify on a file, also held against its head file (see
// HeadSuffix): an edited last line or lines removed from the end are
// reported as tampering.
func VerifyFile(path string) (Summary, error) {
	f, err := os.Open(path)
	if err != nil {
		return Summary{}, fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	head, err := ReadHead(path)
	if err != nil {
		return Summary{}, err
	}
	res, err := scanHead(f, head, nil)
	return res.sum, err
}

// approval reports whether a decision lets a call run.
func approval(decision string) bool {
	switch decision {
	case ClientAccepted, TokenRedeemed, ChannelApproved, PolicyAutoApproved, GrantUsed:
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
	// open holds approvals without an outcome, in journal order.
	open     []Record
	openIdx  map[string]int
	tornLine []byte
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
// after it.
func parseLine(line []byte) (Record, error) {
	if t := bytes.TrimLeft(line, " \t\r"); len(t) == 0 || t[0] != '{' {
		return Record{}, errors.New("not a JSON object")
	}
	var rec Record
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&rec); err != nil {
		return Record{}, err
	}
	if dec.More() {
		return Record{}, errors.New("data after the JSON object")
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
}

// scan verifies r and calls each (if not nil) for each verified record.
func scan(r io.Reader, each func(line int, rec *Record)) (scanResult, error) {
	return scanHead(r, nil, each)
}

// scanHead is scan that also holds the chain against the head the writer
// recorded (nil: none): the line at the head's seq must have the head's
// hash, and the journal must reach that seq.
func scanHead(r io.Reader, head *Head, each func(line int, rec *Record)) (scanResult, error) {
	res := scanResult{openIdx: map[string]int{}}
	res.sum.LastHash = Genesis
	lr := &lineReader{br: bufio.NewReaderSize(r, 64<<10)}
	prevHash := Genesis
	var pending *pendingLink
	n := 0
	// before is the summary as it was before the last accepted line, for
	// when that line turns out to be the edited one.
	before := res.sum
	undo := func(err error) error {
		var te *TamperError
		if errors.As(err, &te) && te.Line <= res.sum.Records {
			res.sum = before
		}
		return err
	}
	for {
		raw, complete, last, tooLong, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return res, fmt.Errorf("journal: reading line %d: %w", n+1, err)
		}
		n++
		if pending != nil {
			return res, undo(blame(pending, raw, tooLong))
		}
		if tooLong {
			return res, &TamperError{Line: n, Reason: fmt.Sprintf("line longer than %d bytes", MaxLineBytes)}
		}
		rec, perr := parseLine(raw)
		// A crash tears only a line that was never acknowledged; the head
		// file names the last acknowledged one.
		if head != nil && head.Seq > res.sum.LastSeq && (!complete || perr != nil && last) {
			return res, headShortened(n, res.sum.LastSeq, head)
		}
		if !complete {
			// No newline: the write of this line never finished. A line
			// that parses but breaks the chain is not a torn write, though.
			if perr != nil || rec.Seq == res.sum.LastSeq+1 && rec.Prev == prevHash {
				return res, torn(n, res.size, raw, "no trailing newline")
			}
		} else if perr != nil {
			if last {
				return res, torn(n, res.size, raw, "invalid JSON: "+perr.Error())
			}
			return res, &TamperError{Line: n, Reason: "invalid JSON in a line that is not the last: " + perr.Error()}
		}
		if want := res.sum.LastSeq + 1; rec.Seq != want {
			return res, &TamperError{Line: n, Reason: fmt.Sprintf("seq %d where %d was expected: a line was removed, duplicated, reordered or edited", rec.Seq, want)}
		}
		h := hashLine(raw)
		if rec.Prev != prevHash {
			switch {
			case n == 1:
				return res, &TamperError{Line: 1, Reason: "prev of the first line is not the genesis hash: line 1 was edited or the journal's beginning was removed"}
			case last:
				return res, undo(&TamperError{Line: n - 1, Reason: fmt.Sprintf("line %d's prev does not match the SHA-256 of line %d: line %d was edited (or line %d's prev was)", n, n-1, n-1, n)})
			}
			pending = &pendingLink{line: n, seq: rec.Seq, hash: h}
			continue
		}
		if head != nil && rec.Seq == head.Seq && h != head.Hash {
			return res, headMismatch(n, head)
		}
		prevHash = h
		before = res.sum
		res.accept(n, &rec, h, int64(len(raw)+1))
		if each != nil {
			each(n, &rec)
		}
	}
	if head != nil {
		if res.sum.LastSeq < head.Seq {
			return res, headShortened(n+1, res.sum.LastSeq, head)
		}
		res.sum.HeadSeq = head.Seq
	}
	return res, nil
}

func blame(p *pendingLink, raw []byte, tooLong bool) error {
	var next Record
	var err error = errors.New("line too long")
	if !tooLong {
		next, err = parseLine(raw)
	}
	switch {
	case err != nil:
		// The line after gives no evidence: name the earlier of the two.
		return &TamperError{Line: p.line - 1, Reason: fmt.Sprintf("line %d's prev does not match the SHA-256 of line %d: line %d was edited (or line %d's prev was)", p.line, p.line-1, p.line-1, p.line)}
	case next.Prev == p.hash && next.Seq == p.seq+1:
		return &TamperError{Line: p.line - 1, Reason: fmt.Sprintf("its SHA-256 no longer matches the prev of line %d, which line %d still chains to: line %d was edited", p.line, p.line+1, p.line-1)}
	default:
		return &TamperError{Line: p.line, Reason: fmt.Sprintf("its prev does not match line %d and line %d does not chain to it: line %d was edited", p.line-1, p.line+1, p.line)}
	}
}

func torn(line int, offset int64, raw []byte, why string) *TornError {
	return &TornError{Line: line, Offset: offset, Bytes: len(raw), Reason: why}
}

func (res *scanResult) accept(n int, rec *Record, h string, size int64) {
	s := &res.sum
	if s.Records == 0 {
		s.First = rec.Time
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
	case approval(rec.Decision) && rec.Call != "":
		if i, ok := res.openIdx[rec.Call]; ok {
			res.open[i] = *rec
		} else {
			res.openIdx[rec.Call] = len(res.open)
			res.open = append(res.open, *rec)
		}
	case outcome(rec.Decision) && rec.Call != "":
		if i, ok := res.openIdx[rec.Call]; ok {
			res.open[i] = Record{}
			delete(res.openIdx, rec.Call)
		}
	}
	s.Unresolved = len(res.openIdx)
}

// unresolved returns the approvals still waiting for an outcome.
func (res *scanResult) unresolved() []Record {
	var out []Record
	for _, r := range res.open {
		if r.Call != "" {
			out = append(out, r)
		}
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
	return fmt.Sprintf("intact: %d records, seq 1..%d, %s to %s, %d ambiguous, %d approved without outcome; last hash %s; %s",
		s.Records, s.LastSeq, s.First.UTC().Format(time.RFC3339), s.Last.UTC().Format(time.RFC3339),
		s.Ambiguous, s.Unresolved, s.LastHash, head)
}
