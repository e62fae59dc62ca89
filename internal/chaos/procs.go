//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// proc is one process of the system under test, restartable at the same
// address: killed with SIGKILL (kill -9) and started again with the same
// command line, as a supervisor would.
type proc struct {
	name  string
	argv  []string
	env   []string
	log   string // its stderr and stdout, appended across restarts
	ready func(ctx context.Context) error

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd's Wait returned
	kills  atomic.Int64
}

func (p *proc) start(ctx context.Context) error {
	p.mu.Lock()
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		p.mu.Unlock()
		return err
	}
	fmt.Fprintf(f, "\n=== chaos: start %s at %s\n", p.name, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		p.mu.Unlock()
		return fmt.Errorf("%s: %w", p.name, err)
	}
	p.cmd = cmd
	exited := make(chan struct{})
	p.exited = exited
	go func() { cmd.Wait(); f.Close(); close(exited) }()
	p.mu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	go func() {
		select {
		case <-exited:
			cancel() // it exited: stop waiting for it
		case <-rctx.Done():
		}
	}()
	if err := p.ready(rctx); err != nil {
		return fmt.Errorf("%s did not become ready (log %s): %w", p.name, p.log, err)
	}
	return nil
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
	p.cmd = nil
	p.kills.Add(1)
}

// stop ends the process with SIGTERM, as an orchestrator does, and waits.
func (p *proc) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
	p.cmd = nil
}

// running reports whether the process is alive (it may have exited on its
// own, as a gate that cannot open its journal on a full disk does).
func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// supervise starts p again until it is ready or ctx ends, as a supervisor
// (systemd, Kubernetes) restarts a crashed process with backoff.
func (p *proc) supervise(ctx context.Context) error {
	for wait := 200 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		if p.running() {
			return nil
		}
		p.kill() // reap what is left
		p.kills.Add(-1)
		sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		err := p.start(sctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// freePort is a loopback port nobody listens on right now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitHTTP polls url until it answers with want.
func waitHTTP(ctx context.Context, url string, want int) error {
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == want {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %v (last: %v)", url, ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitTCP polls addr until it accepts a connection.
func waitTCP(ctx context.Context, addr string) error {
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %v", addr, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// balancer is the load balancer in front of the approval service's
// replicas: each request goes to the next replica, and to the one after
// it when a replica refuses the connection (it is down). A request that
// reached a replica is never sent twice.
type balancer struct {
	targets []*url.URL
	next    atomic.Uint64
	srv     *http.Server
	addr    string
}

func newBalancer(targets []string) (*balancer, error) {
	b := &balancer{}
	for _, t := range targets {
		u, err := url.Parse(t)
		if err != nil {
			return nil, err
		}
		b.targets = append(b.targets, u)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b.addr = "http://" + ln.Addr().String()
	b.srv = &http.Server{Handler: b}
	go b.srv.Serve(ln)
	return b, nil
}

func (b *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := readAll(r)
	if err != nil {
		http.Error(w, "chaos balancer: reading the body: "+err.Error(), http.StatusBadGateway)
		return
	}
	start := b.next.Add(1)
	for i := range uint64(len(b.targets)) {
		t := b.targets[(start+i)%uint64(len(b.targets))]
		if c, err := net.DialTimeout("tcp", t.Host, 200*time.Millisecond); err != nil {
			continue // down: the next one
		} else {
			c.Close()
		}
		r.Body = readCloser(body)
		rp := &httputil.ReverseProxy{
			Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(t) },
			FlushInterval: -1,
			ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
				http.Error(w, "chaos balancer: "+err.Error(), http.StatusBadGateway)
			},
		}
		rp.ServeHTTP(w, r)
		return
	}
	http.Error(w, "chaos balancer: no replica is up", http.StatusBadGateway)
}

func (b *balancer) close() { b.srv.Close() }

func readAll(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	defer r.Body.Close()
	var buf bytes.Buffer
	_, err := buf.ReadFrom(r.Body)
	return buf.Bytes(), err
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

func readCloser(b []byte) nopCloser { return nopCloser{bytes.NewReader(b)} }

// tmpfs mounts a size-limited tmpfs at dir (root only): the disk that
// fills under one journal.
func tmpfs(dir string, size string) (unmount func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("mount tmpfs at %s: %v: %s", dir, err, out)
	}
	return func() { exec.Command("umount", "-l", dir).Run() }, nil
}

// fill writes a file that takes what is left of dir's file system.
func fill(dir string) (free func(), err error) {
	p := filepath.Join(dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		return nil, err
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	small := make([]byte, 512)
	for {
		if _, err := f.Write(small); err != nil {
			break
		}
	}
	f.Close()
	return func() { os.Remove(p) }, nil
}
