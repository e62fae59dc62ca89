package journal

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"strconv"
)

// Open does not read the whole journal. What it needs (the chain's last
// seq and hash, a torn final line, the approvals still waiting for their
// outcome) lies in its tail, and the head file says where that tail
// begins: Head.Open, the oldest approval without an outcome, or the head
// itself. Open reads from there (or from the latest checkpoint, if older,
// so that it is held against the chain) to the end of the set, checking
// that line, and every line after it, as a full verify would. Of the
// files before it, it checks only that they join up: each file's first
// line continues the chain from the last line of the file before it, and
// each sealed segment begins and ends at the seqs its name says.
//
// Anything unexpected (no hint in the head file, a file that does not
// join up, no line at the seq the hint names, damage in the tail) sends
// Open back to reading the whole set, which then judges as it always
// did. The fast path only ever accepts; it never refuses on its own.
// Edits to records before the tail are left to `journal verify`, which
// reads everything.

// resumePoint is where a scan resumed mid-chain begins (see setScan.resume).
type resumePoint struct {
	file int   // index in the set
	off  int64 // byte offset of the line in that file
	line int   // its 1-based line number there
}

// tailScan is what readTail hands back to Open.
type tailScan struct {
	s *setScan
	// id is the hash of line 1 when the set still begins there (the
	// journal's identity in checkpoints); "" for a pruned set.
	id string
	// first is the seq the set begins at: 1, or more once pruned.
	first uint64
	// active is the active file's first record (Args dropped), when it
	// has records and the scan began inside it (the scan then never saw
	// its first line).
	active *Record
}

// readTail verifies the set at path from the line at seq start to its
// end, with head held against it as readSet does, after checking that the
// files before that line join up. ok is false when the set cannot be read
// that way: the caller reads the whole set instead. err is the scan's
// error (as readSet's) when ok.
func readTail(path string, active *os.File, head *Head, start uint64, each func(int, *Record)) (t tailScan, ok bool, err error) {
	if start == 0 {
		return t, false, nil
	}
	segs, err := Segments(path)
	if err != nil {
		return t, false, nil
	}
	// k is the file that holds start.
	k := len(segs)
	for i, sg := range segs {
		if sg.First <= start && start <= sg.Last {
			k = i
			break
		}
	}
	if k == len(segs) && len(segs) > 0 && start <= segs[len(segs)-1].Last {
		return t, false, nil // before the set, or in a gap between segments
	}
	fi, err := active.Stat()
	if err != nil {
		return t, false, nil
	}
	files := make([]*os.File, len(segs)+1)
	sizes := make([]int64, len(segs)+1)
	files[len(segs)], sizes[len(segs)] = active, fi.Size()
	defer func() {
		for _, f := range files[:len(segs)] {
			if f != nil {
				f.Close()
			}
		}
	}()
	openSeg := func(i int) bool {
		if files[i] != nil {
			return true
		}
		f, err := os.Open(segs[i].Path)
		if err != nil {
			return false
		}
		files[i] = f
		st, err := f.Stat()
		if err != nil {
			return false
		}
		sizes[i] = st.Size()
		return true
	}
	lines := 0
	// The files up to k: each begins where the one before it ended.
	var lastSeq, kFirst uint64
	var lastHash string
	var activeFirst *Record
	for i := 0; i <= k; i++ {
		if i < len(segs) && !openSeg(i) {
			return t, false, nil
		}
		line, complete, err := readLineAt(files[i], 0, sizes[i])
		lines++
		if err != nil || !complete {
			return t, false, nil
		}
		rec, err := parseLine(line)
		if err != nil {
			return t, false, nil
		}
		if i == 0 {
			t.first = rec.Seq
		}
		switch {
		case i > 0:
			if rec.Seq != lastSeq+1 || rec.Prev != lastHash {
				return t, false, nil
			}
		case rec.Seq == 1:
			if rec.Prev != Genesis {
				return t, false, nil
			}
			t.id = hashLine(line)
		}
		if i < len(segs) && rec.Seq != segs[i].First {
			return t, false, nil
		}
		if i == k {
			kFirst = rec.Seq
			if i == len(segs) {
				r := rec
				r.Args = nil
				activeFirst = &r
			}
			break
		}
		last, complete, err := lastLineOf(files[i], sizes[i])
		lines++
		if err != nil || !complete {
			return t, false, nil
		}
		lrec, err := parseLine(last)
		if err != nil || lrec.Seq != segs[i].Last {
			return t, false, nil
		}
		lastSeq, lastHash = lrec.Seq, hashLine(last)
	}
	if start < kFirst {
		return t, false, nil
	}
	off, probes, found := findLine(files[k], sizes[k], start)
	lines += probes
	if !found {
		return t, false, nil
	}
	s := newSetScan(head, each)
	s.pruned = true
	s.segs = segs
	if len(segs) > 0 {
		for _, sg := range segs {
			s.names = append(s.names, sg.Path)
		}
		s.names = append(s.names, path)
	}
	s.resume = &resumePoint{file: k, off: off, line: int(start-kFirst) + 1}
	s.res.sum.LastSeq = start - 1
	s.takeUp = true // the chain is taken up from the line at start (see setScan.file)
	s.ord = int(start - 1)
	t.s = s
	defer func() { s.lines += lines }()
	for i := k; i <= len(segs); i++ {
		if i < len(segs) && !openSeg(i) {
			return t, false, nil
		}
		from := int64(0)
		if i == k {
			from = off
		}
		r := io.NewSectionReader(files[i], from, sizes[i]-from)
		if err := s.file(r, i, i < len(segs)); err != nil {
			return t, true, err
		}
	}
	if k == len(segs) && off > 0 {
		t.active = activeFirst
	}
	s.res.sum.Files = len(segs) + 1
	return t, true, s.finish()
}

// readLineAt reads the line that begins at off: its bytes without the
// newline and whether it had one. A line longer than MaxLineBytes is an
// error.
func readLineAt(ra io.ReaderAt, off, size int64) ([]byte, bool, error) {
	var line []byte
	chunk := make([]byte, 4<<10)
	for p := off; p < size; {
		n, err := ra.ReadAt(chunk[:min(int64(len(chunk)), size-p)], p)
		if n == 0 && err != nil {
			return nil, false, err
		}
		if i := bytes.IndexByte(chunk[:n], '\n'); i >= 0 {
			return append(line, chunk[:i]...), true, nil
		}
		line = append(line, chunk[:n]...)
		if len(line) > MaxLineBytes {
			return nil, false, errors.New("line too long")
		}
		p += int64(n)
	}
	return line, false, nil
}

// lastLineOf reads the file's last line: its bytes without the newline
// and whether it had one.
func lastLineOf(ra io.ReaderAt, size int64) ([]byte, bool, error) {
	if size == 0 {
		return nil, false, nil
	}
	end := size
	var b [1]byte
	if _, err := ra.ReadAt(b[:], size-1); err != nil {
		return nil, false, err
	}
	complete := b[0] == '\n'
	if complete {
		end--
	}
	// Back from end to the newline before the line, a chunk at a time.
	chunk := make([]byte, 4<<10)
	start := end
	for start > 0 {
		n := min(int64(len(chunk)), start)
		if _, err := ra.ReadAt(chunk[:n], start-n); err != nil {
			return nil, false, err
		}
		if i := bytes.LastIndexByte(chunk[:n], '\n'); i >= 0 {
			start = start - n + int64(i) + 1
			break
		}
		start -= n
		if end-start > MaxLineBytes {
			return nil, false, errors.New("line too long")
		}
	}
	line := make([]byte, end-start)
	if _, err := ra.ReadAt(line, start); err != nil {
		return nil, false, err
	}
	return line, complete, nil
}

// findLine finds the byte offset of the line whose record has seq want,
// by bisecting on the seq every line begins with ({"seq":N,...}: the
// writer encodes Record's fields in order). Seqs count up through a file
// the journal wrote; if this one's do not, or a line does not begin so,
// it reports not found. probes counts the lines it looked at.
func findLine(ra io.ReaderAt, size int64, want uint64) (off int64, probes int, found bool) {
	// Invariant: the line sought, if any, begins in [lo, hi), and lo is
	// the start of a line.
	lo, hi := int64(0), size
	for hi-lo > 4<<10 {
		mid := lo + (hi-lo)/2
		st, ok := nextLineStart(ra, mid, size)
		if !ok {
			return 0, probes, false
		}
		if st >= hi {
			hi = mid
			continue
		}
		probes++
		seq, ok := seqAt(ra, st)
		switch {
		case !ok:
			return 0, probes, false
		case seq == want:
			return st, probes, true
		case seq < want:
			lo = st
		default:
			hi = mid
		}
	}
	lr := &lineReader{br: bufio.NewReaderSize(io.NewSectionReader(ra, lo, size-lo), 4<<10)}
	for p := lo; ; {
		line, complete, _, tooLong, err := lr.next()
		if err != nil || tooLong {
			return 0, probes, false
		}
		probes++
		seq, ok := seqPrefix(line)
		switch {
		case !ok || seq > want:
			return 0, probes, false
		case seq == want:
			return p, probes, true
		case !complete:
			return 0, probes, false
		}
		p += int64(len(line)) + 1
	}
}

// nextLineStart returns the start of the first line that begins at or
// after p.
func nextLineStart(ra io.ReaderAt, p, size int64) (int64, bool) {
	if p == 0 {
		return 0, true
	}
	chunk := make([]byte, 4<<10)
	for q := p - 1; q < size; {
		n, err := ra.ReadAt(chunk[:min(int64(len(chunk)), size-q)], q)
		if n == 0 && err != nil {
			return 0, false
		}
		if i := bytes.IndexByte(chunk[:n], '\n'); i >= 0 {
			return q + int64(i) + 1, true
		}
		q += int64(n)
		if q-p > MaxLineBytes {
			return 0, false
		}
	}
	return size, true
}

var seqKey = []byte(`{"seq":`)

// seqAt reads the seq the line at off begins with.
func seqAt(ra io.ReaderAt, off int64) (uint64, bool) {
	var b [len(`{"seq":`) + 21]byte
	n, _ := ra.ReadAt(b[:], off)
	return seqPrefix(b[:n])
}

// seqPrefix parses {"seq":N, at the start of line.
func seqPrefix(line []byte) (uint64, bool) {
	rest, ok := bytes.CutPrefix(line, seqKey)
	if !ok {
		return 0, false
	}
	i := bytes.IndexByte(rest, ',')
	if i <= 0 {
		return 0, false
	}
	seq, err := strconv.ParseUint(string(rest[:i]), 10, 64)
	return seq, err == nil
}
