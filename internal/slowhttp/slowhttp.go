// Package slowhttp is a deliberately slow HTTP/1.1 client for tests: it
// sends a request's headers at once and then its body one byte at a time,
// the way a slowloris attacker holds a server's connections open.
package slowhttp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// Result is what the server did with a trickled request.
type Result struct {
	Status string // the status line, e.g. "HTTP/1.1 408 Request Timeout"; empty if none came
	Code   int    // the status code; 0 if none came
	Closed bool   // the server closed the connection after answering
	Sent   int    // body bytes written before the server answered or closed
}

// Trickle POSTs to path on addr a body of size spaces, one byte every
// interval, with the given extra header lines ("Name: value\r\n" each). It
// waits at most wait for the server's answer: a server without a body
// timeout would otherwise keep reading for size*interval.
func Trickle(addr, path string, size int, interval, wait time.Duration, extra string) (r Result, err error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return r, err
	}
	defer c.Close()
	if _, err := fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n", path, addr, size, extra); err != nil {
		return r, err
	}
	stop := make(chan struct{})
	sent := make(chan int, 1)
	go func() {
		n := 0
		defer func() { sent <- n }()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for n < size {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if _, err := c.Write([]byte(" ")); err != nil {
				return
			}
			n++
		}
	}()
	defer func() {
		close(stop)
		r.Sent = <-sent
	}()
	c.SetReadDeadline(time.Now().Add(wait))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return r, nil // no answer within wait
	}
	r.Code = resp.StatusCode
	r.Status = resp.Proto + " " + resp.Status
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	// A close shows as EOF, or as a reset when our trickle raced it; only
	// a timeout means the connection is still open.
	_, err = br.ReadByte()
	var ne net.Error
	r.Closed = err != nil && !(errors.As(err, &ne) && ne.Timeout())
	return r, nil
}

// Header formats header lines for Trickle.
func Header(kv ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		b.WriteString(kv[i] + ": " + kv[i+1] + "\r\n")
	}
	return b.String()
}
