package journal

import (
	"errors"
)

// ReadFile reads the journal at path for a viewer while its writer may be
// appending to it: the whole set of a rotated journal, its sealed segments
// and then the active file. It takes no lock (the writer's flock is
// exclusive to writers; a reader never contends for it) and checks what it
// reads as VerifyFile does, chain across files and head file, calling each
// for every record that verified, in order. A set whose oldest segments
// were pruned is read from what remains (`journal verify --pruned --key`
// judges whether a signed checkpoint vouches for it).
//
// The error is VerifyFile's. A *TornError is what a reader sees when it
// catches the writer between starting and finishing a line (or what a
// crash left): every record before it was delivered, and the caller may
// treat it as the journal so far. A *TamperError means the records after
// the damage were not delivered. A line can look good until the next one
// shows it was edited, so each record is handed over only once the line
// after it verified (or the set ended cleanly): no edited record is ever
// delivered.
func ReadFile(path string, each func(*Record)) (Summary, error) {
	head, err := ReadHead(path)
	if err != nil {
		// The writer rewrites the head in place after each commit; a read
		// that raced one such write is read again once. Real damage stays.
		if head, err = ReadHead(path); err != nil {
			return Summary{}, err
		}
	}
	var held *Record
	heldOrd := 0
	s, verr := readSet(path, nil, head, setOptions{pruned: true}, func(ord int, rec *Record) {
		if held != nil {
			each(held)
		}
		r := *rec
		held, heldOrd = &r, ord
	})
	if s == nil {
		return Summary{}, verr
	}
	var te *TamperError
	if held != nil && !(errors.As(verr, &te) && te.ord <= heldOrd) {
		each(held)
	}
	return s.res.sum, verr
}
