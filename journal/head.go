package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// HeadSuffix names the side file in which a journal keeps its head: the
// seq and hash of its last durable line (journal.jsonl → journal.jsonl.head).
//
// The chain alone cannot show an edit to the last line (no later line
// carries its hash) or lines removed from the end. The head file can: Open
// and every verify compare the chain with it, so such an edit is reported
// as tampering. It is a tripwire, not a proof: whoever can rewrite both
// files can make them agree. Anchor LastHash elsewhere for that.
const HeadSuffix = ".head"

// Head is the last durable line the writer recorded in the head file.
type Head struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
	// Open is the seq of the oldest approval still waiting for its
	// outcome among the records up to Seq, or Seq+1 when there is none:
	// every approval before it has its outcome at or before Seq. It tells
	// Open where to start reading (see Open); 0 (absent, as in a head
	// written before it existed) makes Open read the whole set. It is a
	// hint the chain is checked against, never a proof.
	Open uint64 `json:"open,omitempty"`
}

// headSize is the head file's fixed size: every update overwrites the same
// bytes in place with one write, so the file is never seen half-replaced by
// a shorter value.
const headSize = 128

func (h Head) encode() []byte {
	b, _ := json.Marshal(h)
	if len(b) > headSize-1 {
		// Only past seq 10^18: without the hint the next Open reads the
		// whole set, which is always correct.
		h.Open = 0
		b, _ = json.Marshal(h)
	}
	out := bytes.Repeat([]byte{' '}, headSize)
	copy(out, b)
	out[headSize-1] = '\n'
	return out
}

func parseHead(b []byte) (Head, error) {
	var h Head
	t := bytes.TrimRight(b, " \n")
	dec := json.NewDecoder(bytes.NewReader(t))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return h, err
	}
	if dec.More() {
		return h, errors.New("data after the JSON object")
	}
	if len(h.Hash) != 64 || strings.Trim(h.Hash, "0123456789abcdef") != "" {
		return h, errors.New("hash is not 64 lowercase hex digits")
	}
	if h.Open > h.Seq+1 {
		return h, fmt.Errorf("open %d is past seq %d+1", h.Open, h.Seq)
	}
	return h, nil
}

// ReadHead reads the head file of the journal at path. It returns nil and
// no error when there is none (a journal written before head files, or
// an empty file left by a crash right after creating it).
func ReadHead(path string) (*Head, error) {
	f, err := os.Open(path + HeadSuffix)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("journal: head file: %w", err)
	}
	defer f.Close()
	return readHead(f, path+HeadSuffix)
}

func readHead(f *os.File, name string) (*Head, error) {
	b, err := io.ReadAll(io.LimitReader(f, headSize+1))
	if err != nil {
		return nil, fmt.Errorf("journal: head file %s: %w", name, err)
	}
	if len(b) == 0 {
		return nil, nil
	}
	h, err := parseHead(b)
	if err == nil && len(b) != headSize {
		err = fmt.Errorf("%d bytes, not %d", len(b), headSize)
	}
	if err != nil {
		return nil, fmt.Errorf("journal: head file %s is damaged (%v): something other than the journal wrote it", name, err)
	}
	return &h, nil
}

// openHead opens (creating if needed) the head file of the journal at path
// and reads what it holds.
func openHead(path string) (*os.File, *Head, error) {
	f, err := os.OpenFile(path+HeadSuffix, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("journal: head file: %w", err)
	}
	h, err := readHead(f, path+HeadSuffix)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, h, nil
}

// writeHead records the journal's new head. It runs after the lines it
// names are durable, so the head never gets ahead of the journal; after a
// crash it may lag behind, which verify accepts. A failure does not undo
// the durable records: it is kept and returned by Close.
func (j *Journal) writeHead(seq uint64, hash string) {
	h := Head{Seq: seq, Hash: hash, Open: seq + 1}
	for _, s := range j.pend {
		h.Open = min(h.Open, s)
	}
	if _, err := j.head.WriteAt(h.encode(), 0); err != nil && j.headErr == nil {
		j.headErr = fmt.Errorf("journal: updating head file: %w", err)
	}
}
