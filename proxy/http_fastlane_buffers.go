package proxy

import (
	"bufio"
	"bytes"
	"io"
	"sync"
	"time"
)

// laneBuffers are the HTTP fast lane's buffers for one upstream answer:
// the reader of its event stream, the event being gathered and its data,
// or the whole of a JSON answer. They are pooled: a call that allocated
// them afresh would make the garbage collector run every few calls.
type laneBuffers struct {
	br          *bufio.Reader
	event, data []byte
}

// laneReadSize is the event-stream reader's buffer; a longer line is
// gathered in pieces (readLine).
const laneReadSize = 32 << 10

// laneKeep is the most a pooled buffer keeps between calls: one answer
// of many megabytes is not held for every call after it.
const laneKeep = 1 << 20

var lanePool = sync.Pool{New: func() any {
	return &laneBuffers{br: bufio.NewReaderSize(nil, laneReadSize)}
}}

// getLaneBuffers takes buffers from the pool, the reader set to read r
// (nil when only the byte buffers are wanted).
func getLaneBuffers(r io.Reader) *laneBuffers {
	lb := lanePool.Get().(*laneBuffers)
	if r != nil {
		lb.br.Reset(r)
	}
	return lb
}

// put returns lb to the pool, holding nothing of the answer it read.
func (lb *laneBuffers) put() {
	lb.br.Reset(nil)
	if cap(lb.event) > laneKeep {
		lb.event = nil
	}
	if cap(lb.data) > laneKeep {
		lb.data = nil
	}
	lb.event, lb.data = lb.event[:0], lb.data[:0]
	lanePool.Put(lb)
}

// readAll reads r to its end into lb's data buffer, which holds the bytes
// until put.
func (lb *laneBuffers) readAll(r io.Reader) ([]byte, error) {
	b := bytes.NewBuffer(lb.data[:0])
	_, err := b.ReadFrom(r)
	lb.data = b.Bytes()
	return lb.data, err
}

// readLine appends to buf the next line of br, its "\n" included, as
// br.ReadBytes would return it, without a copy of its own. A stream that
// ends before a "\n" is an error (io.EOF when it ended cleanly).
func readLine(br *bufio.Reader, buf []byte) ([]byte, error) {
	for {
		frag, err := br.ReadSlice('\n')
		buf = append(buf, frag...)
		if err != bufio.ErrBufferFull {
			return buf, err
		}
	}
}

// After the call's response an upstream ends its stream; until it has,
// its connection cannot carry another request, and closing the stream
// unread closes the connection (the next call would dial again). So the
// lane reads on, as the SDK client does, but only so much and so long:
// the answer has been relayed, and what follows it is not.
const (
	laneDrainMax  = 4 << 10
	laneDrainWait = time.Second
)

// drainRest reads and drops what br's stream holds after the response,
// up to laneDrainMax bytes; past laneDrainWait, stop ends the upstream
// request (and the read).
func drainRest(br *bufio.Reader, stop func()) {
	t := time.AfterFunc(laneDrainWait, stop)
	defer t.Stop()
	io.CopyN(io.Discard, br, laneDrainMax)
}
