package journal

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// A rotated journal is a set of files: sealed segments PATH.FIRST-LAST
// (FIRST and LAST the seqs of their first and last records, zero-padded to
// 12 digits so that a listing sorts them) followed by the active file PATH.
// The set is one chain: seq keeps counting across files and the first
// record of each file has as prev the hash of the last record of the file
// before it, so the files read in order are exactly the journal as if it
// had never rotated. Removing, reordering, renaming or replacing a segment
// breaks the chain at a file boundary.

// Segment is one sealed file of a rotated journal.
type Segment struct {
	Path        string
	First, Last uint64 // the seqs its name claims
}

var segmentSuffix = regexp.MustCompile(`^\.([0-9]{12,20})-([0-9]{12,20})$`)

// SegmentPath is the name a segment holding seqs first..last of the
// journal at path gets when it is sealed.
func SegmentPath(path string, first, last uint64) string {
	return fmt.Sprintf("%s.%012d-%012d", path, first, last)
}

// Segments lists the sealed segments of the journal at path, ordered by
// the seqs their names claim. Verify checks that each holds what its name
// says.
func Segments(path string) ([]Segment, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("journal: listing segments: %w", err)
	}
	var segs []Segment
	for _, e := range entries {
		name := e.Name()
		if len(name) <= len(base) || name[:len(base)] != base {
			continue
		}
		m := segmentSuffix.FindStringSubmatch(name[len(base):])
		if m == nil {
			continue
		}
		first, err1 := strconv.ParseUint(m[1], 10, 64)
		last, err2 := strconv.ParseUint(m[2], 10, 64)
		if err1 != nil || err2 != nil || first == 0 || last < first {
			return nil, fmt.Errorf("journal: segment %s: its name is not a valid seq range", filepath.Join(dir, name))
		}
		if !e.Type().IsRegular() {
			return nil, fmt.Errorf("journal: segment %s is not a regular file", filepath.Join(dir, name))
		}
		segs = append(segs, Segment{Path: filepath.Join(dir, name), First: first, Last: last})
	}
	sort.Slice(segs, func(a, b int) bool {
		if segs[a].First != segs[b].First {
			return segs[a].First < segs[b].First
		}
		return segs[a].Last < segs[b].Last
	})
	return segs, nil
}

// SetFiles lists the files of the journal at path in chain order: its
// sealed segments, then path itself.
func SetFiles(path string) ([]string, error) {
	segs, err := Segments(path)
	if err != nil {
		return nil, err
	}
	files := make([]string, 0, len(segs)+1)
	for _, s := range segs {
		files = append(files, s.Path)
	}
	return append(files, path), nil
}

// SetOption changes how a journal set is read (VerifyFile, VerifyJournal,
// ShowFile, Export).
type SetOption func(*setOptions)

type setOptions struct{ pruned bool }

// AllowPruned accepts a set whose oldest segments were deleted (retention
// pruning): it may begin after seq 1, its first record linking to a hash
// that is no longer in the set. Without it such a set is an error. With
// signed checkpoints (VerifyJournal with a key) a pruned set must still be
// vouched for: a checkpoint must match the chain at or after the seq just
// before where it now begins.
func AllowPruned() SetOption { return func(o *setOptions) { o.pruned = true } }

func setOpts(opts []SetOption) setOptions {
	var o setOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// pos is where a line is: its file (index into the set), its 1-based line
// in that file, and its 1-based ordinal in the whole set.
type pos struct{ file, line, ord int }

// setScan verifies a journal set one file at a time, carrying the chain
// across files.
type setScan struct {
	res    scanResult
	head   *Head
	each   func(ord int, rec *Record)
	names  []string // file names for messages; nil for a lone file
	segs   []Segment
	pruned bool

	prevHash string
	prevPos  pos // the last accepted line
	before   Summary
	pending  *pendingLink
	ord      int
	last     pos // the last line read, accepted or not

	// resume, when set, starts the scan mid-chain (readTail): in file
	// resume.file, at byte resume.off, which is line resume.line there.
	resume *resumePoint
	takeUp bool // the next line read is the resumed one: its prev starts the chain
	lines  int  // lines read (Open's tests count them)

	// of the file being (or last) scanned
	fileSize    int64
	fileRecords int
	fileFirst   Record // its first record (Args dropped)
}

func newSetScan(head *Head, each func(int, *Record)) *setScan {
	s := &setScan{head: head, each: each}
	s.res.sum.LastHash = Genesis
	s.prevHash = Genesis
	return s
}

func (s *setScan) fileName(i int) string {
	if s.names == nil {
		return ""
	}
	return s.names[i]
}

// lineName names a line in a message.
func (s *setScan) lineName(p pos) string {
	if s.names == nil {
		return fmt.Sprintf("line %d", p.line)
	}
	return fmt.Sprintf("line %d of %s", p.line, filepath.Base(s.names[p.file]))
}

func (s *setScan) tamper(p pos, reason string) *TamperError {
	return &TamperError{File: s.fileName(p.file), Line: p.line, Reason: reason, ord: p.ord}
}

// undo takes back the last accepted line from the summary when err blames
// it: its edit shows only in the next line's prev.
func (s *setScan) undo(err error) error {
	var te *TamperError
	if errors.As(err, &te) && te.ord == s.prevPos.ord && s.prevPos.ord > 0 {
		s.res.sum = s.before
	}
	return err
}

// editedPrev is the error for a line whose prev does not match the line
// before it when nothing after it tells which of the two was edited.
func (s *setScan) editedPrev(p pos) error {
	q := s.prevPos
	return s.undo(s.tamper(q, fmt.Sprintf("%s's prev does not match the SHA-256 of %s: %s was edited (or %s's prev was)",
		s.lineName(p), s.lineName(q), s.lineName(q), s.lineName(p))))
}

// file scans one file of the set. sealed files are segments: complete,
// non-empty, and holding the seqs their names claim.
func (s *setScan) file(r io.Reader, fi int, sealed bool) error {
	lr := &lineReader{br: bufio.NewReaderSize(r, 64<<10)}
	s.fileSize, s.fileRecords, s.fileFirst = 0, 0, Record{}
	sum := &s.res.sum
	n := 0
	var firstSeq, lastSeq uint64
	if rp := s.resume; rp != nil && rp.file == fi && rp.off > 0 {
		// r begins at line rp.line of the file, at byte rp.off.
		s.fileSize, n = rp.off, rp.line-1
		if sealed {
			firstSeq = s.segs[fi].First // checked by readTail
		}
	}
	for {
		raw, complete, last, tooLong, err := lr.next()
		if err == io.EOF {
			break
		}
		at := pos{fi, n + 1, s.ord + 1}
		if err != nil {
			return fmt.Errorf("journal: reading %s: %w", s.lineName(at), err)
		}
		s.lines++
		n++
		s.ord++
		s.last = at
		if p := s.pending; p != nil {
			return s.undo(s.blame(p, raw, tooLong, at))
		}
		if tooLong {
			return s.tamper(at, fmt.Sprintf("line longer than %d bytes", MaxLineBytes))
		}
		rec, perr := parseLine(raw)
		if s.takeUp {
			// The first line of a scan resumed mid-chain (readTail): the
			// chain is taken up from the hash it links to. That line is
			// at or before the head's seq, so durable and complete.
			if !complete || perr != nil {
				return s.tamper(at, "the line the scan resumes at is incomplete")
			}
			s.takeUp = false
			sum.LastHash, s.prevHash = rec.Prev, rec.Prev
		}
		end := last && !sealed // the last line of the set
		if !complete && sealed {
			return s.tamper(at, "the last line of a sealed segment has no newline: rotation seals only complete, durable lines")
		}
		// A crash tears only a line that was never acknowledged; the head
		// file names the last acknowledged one.
		if s.head != nil && s.head.Seq > sum.LastSeq && (!complete || perr != nil && end) {
			return s.headShortened(at)
		}
		if !complete {
			// No newline: the write of this line never finished. A line
			// that parses but breaks the chain is not a torn write, though.
			if perr != nil || rec.Seq == sum.LastSeq+1 && rec.Prev == s.prevHash {
				return &TornError{File: s.fileName(fi), Line: n, Offset: s.fileSize, Bytes: len(raw), Reason: "no trailing newline"}
			}
		} else if perr != nil {
			if end {
				return &TornError{File: s.fileName(fi), Line: n, Offset: s.fileSize, Bytes: len(raw), Reason: "invalid JSON: " + perr.Error()}
			}
			return s.tamper(at, "invalid JSON in a line that is not the last: "+perr.Error())
		}
		if n == 1 {
			firstSeq = rec.Seq
		}
		lastSeq = rec.Seq
		if s.ord == 1 && rec.Seq > 1 {
			if !s.pruned {
				return s.tamper(at, fmt.Sprintf("the journal begins at seq %d: the records before it (seq 1..%d) are missing; if their segments were pruned on purpose, accept that explicitly (mcpsafe journal verify --pruned)", rec.Seq, rec.Seq-1))
			}
			// Pruned: the chain starts from the hash this record links
			// to. Only a signed checkpoint can vouch for it.
			sum.LastSeq, sum.LastHash, s.prevHash = rec.Seq-1, rec.Prev, rec.Prev
		}
		if want := sum.LastSeq + 1; rec.Seq != want {
			reason := fmt.Sprintf("seq %d where %d was expected: a line was removed, duplicated, reordered or edited", rec.Seq, want)
			if n == 1 && fi > 0 {
				reason = fmt.Sprintf("this file begins at seq %d but %s ends at seq %d: a segment between them is missing, or segments were reordered, renamed or replaced", rec.Seq, filepath.Base(s.names[fi-1]), want-1)
			}
			return s.tamper(at, reason)
		}
		h := hashLine(raw)
		if rec.Prev != s.prevHash {
			switch {
			case s.ord == 1:
				return s.tamper(at, "prev of the first line is not the genesis hash: line 1 was edited or the journal's beginning was removed")
			case end:
				return s.editedPrev(at)
			}
			s.pending = &pendingLink{line: at.line, seq: rec.Seq, hash: h, at: at}
			continue
		}
		if s.head != nil && rec.Seq == s.head.Seq && h != s.head.Hash {
			return s.tamper(at, fmt.Sprintf("its SHA-256 differs from the one the head file recorded for seq %d when it was written: %s was edited", s.head.Seq, s.lineName(at)))
		}
		s.prevHash = h
		s.before = *sum
		s.prevPos = at
		s.res.accept(n, &rec, h, int64(len(raw)+1))
		s.fileSize += int64(len(raw) + 1)
		s.fileRecords++
		if s.fileRecords == 1 {
			s.fileFirst = rec
			s.fileFirst.Args = nil
		}
		if s.each != nil {
			s.each(s.ord, &rec)
		}
	}
	if !sealed {
		return nil
	}
	seg := s.segs[fi]
	if n == 0 {
		return s.tamper(pos{fi, 1, s.ord + 1}, "the sealed segment is empty: rotation never seals an empty file")
	}
	if firstSeq != seg.First || lastSeq != seg.Last {
		return s.tamper(pos{fi, 1, s.ord - n + 1}, fmt.Sprintf("the segment holds seq %d..%d but its name says %d..%d: it was renamed", firstSeq, lastSeq, seg.First, seg.Last))
	}
	return nil
}

// finish checks the end of the set against the head file.
func (s *setScan) finish() error {
	if p := s.pending; p != nil {
		return s.editedPrev(p.at)
	}
	if s.head != nil {
		if s.res.sum.LastSeq < s.head.Seq {
			end := s.last
			if len(s.names) > 0 {
				end.file = len(s.names) - 1
			}
			if end.file == s.last.file {
				end.line = s.last.line + 1
			} else {
				end.line = 1
			}
			end.ord = s.ord + 1
			return s.headShortened(end)
		}
		s.res.sum.HeadSeq = s.head.Seq
	}
	return nil
}

func (s *setScan) headShortened(at pos) error {
	h, last := s.head, s.res.sum.LastSeq
	return s.tamper(at, fmt.Sprintf("the journal ends at seq %d but its head file records seq %d (hash %s) as written: %d record(s) removed or cut from the end", last, h.Seq, h.Hash, h.Seq-last))
}

func (s *setScan) blame(p *pendingLink, raw []byte, tooLong bool, at pos) error {
	var next Record
	var err error = errors.New("line too long")
	if !tooLong {
		next, err = parseLine(raw)
	}
	q := s.prevPos
	switch {
	case err != nil:
		// The line after gives no evidence: name the earlier of the two.
		return s.editedPrev(p.at)
	case next.Prev == p.hash && next.Seq == p.seq+1:
		return s.tamper(q, fmt.Sprintf("its SHA-256 no longer matches the prev of %s, which %s still chains to: %s was edited", s.lineName(p.at), s.lineName(at), s.lineName(q)))
	default:
		return s.tamper(p.at, fmt.Sprintf("its prev does not match %s and %s does not chain to it: %s was edited", s.lineName(q), s.lineName(at), s.lineName(p.at)))
	}
}

// readSet verifies the journal set at path: its segments, then the active
// file (read from active if not nil, else opened), held against head.
func readSet(path string, active io.Reader, head *Head, o setOptions, each func(int, *Record)) (*setScan, error) {
	segs, err := Segments(path)
	if err != nil {
		return nil, err
	}
	s := newSetScan(head, each)
	s.pruned = o.pruned
	s.segs = segs
	if len(segs) > 0 {
		for _, sg := range segs {
			s.names = append(s.names, sg.Path)
		}
		s.names = append(s.names, path)
	}
	for i, sg := range segs {
		f, err := os.Open(sg.Path)
		if err != nil {
			return s, fmt.Errorf("journal: %w", err)
		}
		err = s.file(f, i, true)
		f.Close()
		if err != nil {
			return s, err
		}
	}
	if active == nil {
		f, err := os.Open(path)
		switch {
		case errors.Is(err, os.ErrNotExist) && len(segs) > 0:
			// A crash between sealing the last segment and creating the
			// new active file: the set ends with that segment.
			active = eofReader{}
		case err != nil:
			return s, fmt.Errorf("journal: %w", err)
		default:
			defer f.Close()
			active = f
		}
	}
	if err := s.file(active, len(segs), false); err != nil {
		return s, err
	}
	s.res.sum.Files = len(segs) + 1
	return s, s.finish()
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// VerifySignedSet is VerifySigned over the whole set of a rotated journal
// (its sealed segments, then path), with options. A pruned set
// (AllowPruned) passes only if some checkpoint is held against the chain
// at or after the seq just before where it now begins: that checkpoint
// vouches for every record from there to its seq, and it names the
// journal, whose first line is gone.
func VerifySignedSet(path string, key note.Verifier, files []string, opts ...SetOption) (Summary, CheckpointReport, error) {
	if len(files) == 0 {
		files = []string{CheckpointsPath(path)}
	}
	all, torn, err := readCheckpointFiles(key, files)
	if err != nil {
		return Summary{}, CheckpointReport{}, err
	}
	return verifySetAgainst(path, all, torn, strings.Join(files, ", "), opts...)
}

// verifySetAgainst verifies the journal set at path and checks it against
// all, checkpoints whose signatures were already checked; from names where
// they came from, for the error when there are none.
func verifySetAgainst(path string, all []Checkpoint, torn []string, from string, opts ...SetOption) (Summary, CheckpointReport, error) {
	head, err := ReadHead(path)
	if err != nil {
		return Summary{}, CheckpointReport{}, err
	}
	ix := newCheckpointIndex(all)
	s, err := readSet(path, nil, head, setOpts(opts), ix.each)
	if s == nil {
		return Summary{}, CheckpointReport{}, err
	}
	sum := s.res.sum
	if err != nil {
		return sum, CheckpointReport{}, err
	}
	rep, err := ix.finish(sum)
	rep.TornFiles = torn
	if err != nil {
		return sum, rep, err
	}
	if sum.Records > 0 && rep.Checkpoints == 0 {
		return sum, rep, &CheckpointError{Kind: CheckpointMissing, Reason: fmt.Sprintf("%d records and no signed checkpoint in %s", sum.Records, from)}
	}
	if sum.FirstSeq > 1 {
		if ix.checked == 0 {
			return sum, rep, &CheckpointError{Kind: CheckpointMissing, Reason: fmt.Sprintf("the journal now begins at seq %d (its oldest segments were pruned) and no signed checkpoint at seq %d or later is held against what remains: nothing vouches for it", sum.FirstSeq, sum.FirstSeq-1)}
		}
		start := ix.first
		rep.Start = &start
	}
	return sum, rep, nil
}

// each is the scan callback that feeds the index the hash of every line
// before the current one (the prev of line seq is the hash of seq-1).
func (ix *checkpointIndex) each(_ int, rec *Record) {
	if rec.Seq > 1 {
		ix.hash(rec.Seq-1, rec.Prev)
	}
}
