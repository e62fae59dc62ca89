package ledgertest

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/ledger"
)

// FaultTimeout is the per-operation bound (ledger_timeout) the fault tests
// configure; bound is how long any refused call may take (generous: 2
// shared cores).
const (
	FaultTimeout = 300 * time.Millisecond
	bound        = 3 * time.Second
	// freezeTimeout is the ledger_timeout of TestServerFreezesMidRun. It
	// also bounds that test's setup through the proxy (PostgreSQL: connect,
	// fork a backend, CREATE TABLE and INDEX with their WAL fsyncs), which
	// takes 35 ms idle, 145 ms at load 8 under -race, and more when other
	// suites fsync; 300 ms failed once under load.
	freezeTimeout = time.Second
)

// SilentServer accepts connections and never reads or answers, like a
// stuck server or a black-holing firewall that completed the handshake.
func SilentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// A Freezer is a TCP proxy to a real server that can stop forwarding. Bytes
// that arrive while frozen are dropped with their connection, so nothing
// sent during a freeze reaches the server later.
type Freezer struct {
	ln     net.Listener
	target string
	frozen atomic.Bool
	thawed chan struct{}
	mu     sync.Mutex
}

// NewFreezer starts a Freezer forwarding to target (host:port).
func NewFreezer(t *testing.T, target string) *Freezer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &Freezer{ln: ln, target: target, thawed: make(chan struct{})}
	close(f.thawed)
	go f.serve()
	t.Cleanup(func() { ln.Close() })
	return f
}

// Addr is the address to dial instead of the target.
func (f *Freezer) Addr() string { return f.ln.Addr().String() }

// Freeze stops forwarding.
func (f *Freezer) Freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frozen.Store(true)
	f.thawed = make(chan struct{})
}

// Thaw forwards again.
func (f *Freezer) Thaw() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frozen.Store(false)
	close(f.thawed)
}

func (f *Freezer) serve() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			up, err := net.Dial("tcp", f.target)
			if err != nil {
				c.Close()
				return
			}
			go f.pipe(up, c)
			f.pipe(c, up)
		}()
	}
}

func (f *Freezer) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if f.frozen.Load() {
				f.mu.Lock()
				ch := f.thawed
				f.mu.Unlock()
				<-ch
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func hostPort(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		t.Fatalf("no host in %q: %v", raw, err)
	}
	return u.Host
}

func replaceHost(raw, from, to string) string { return strings.Replace(raw, from, to, 1) }

// Timed runs f and fails the test if it took longer than the bound every
// refusal must come within (3 s: generous for 2 shared cores).
func Timed(t *testing.T, what string, f func()) {
	t.Helper()
	start := time.Now()
	f()
	if d := time.Since(start); d > bound {
		t.Errorf("%s took %v; every refusal must come within %v", what, d, bound)
	}
}

// OpenRefusesDeadServer checks that opening a store whose server is a
// dead port, or one that accepts connections and never answers, fails
// with ledger.ErrUnavailable within the bound. urlFor returns the store URL
// for a server at host:port.
func OpenRefusesDeadServer(t *testing.T, urlFor func(hostport string) string) {
	silent := SilentServer(t)
	for kind, hp := range map[string]string{"dead port": "127.0.0.1:1", "silent server": silent} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			u := WithParams(urlFor(hp), "ledger_timeout", FaultTimeout.String())
			Timed(t, "Open", func() {
				s, err := ledger.Open(context.Background(), u)
				if err == nil {
					s.Close()
					t.Fatal("Open succeeded against a server that cannot answer")
				}
				if !errors.Is(err, ledger.ErrUnavailable) {
					t.Fatalf("Open error %v does not wrap ErrUnavailable", err)
				}
			})
		})
	}
}

// ServerFreezesMidRun opens the store at real (a URL of a live server)
// through a Freezer, freezes it (the server stops answering), checks that
// every call is refused within the bound and never approves, then thaws it
// and checks the service resumes and the grant is still redeemable exactly
// once.
func ServerFreezesMidRun(t *testing.T, real string) {
	hp := hostPort(t, real)
	fz := NewFreezer(t, hp)
	u := WithParams(replaceHost(real, hp, fz.Addr()), "ledger_timeout", freezeTimeout.String())
	ctx := context.Background()
	s, err := ledger.Open(ctx, u)
	if err != nil {
		t.Fatalf("Open through proxy: %v", err)
	}
	defer s.Close()
	n := NewNonce()
	if err := s.Issue(ctx, n, time.Now().Add(time.Hour)); err != nil {
		t.Fatalf("Issue: %v", err)
	}
	fz.Freeze()
	for i := 0; i < 3; i++ {
		Timed(t, "Redeem while frozen", func() {
			ok, err := s.Redeem(ctx, n)
			if ok || !errors.Is(err, ledger.ErrUnavailable) {
				t.Fatalf("Redeem while frozen = %v, %v; want false, ErrUnavailable", ok, err)
			}
		})
		Timed(t, "Issue while frozen", func() {
			if err := s.Issue(ctx, NewNonce(), time.Now().Add(time.Hour)); !errors.Is(err, ledger.ErrUnavailable) {
				t.Fatalf("Issue while frozen = %v; want ErrUnavailable", err)
			}
		})
	}
	fz.Thaw()
	wins := 0
	// Every pooled connection died with the freeze: retry for a
	// while, not a count, since each reconnect may take up to
	// freezeTimeout on a loaded machine.
	retryUntil := time.Now().Add(15 * time.Second)
	for i := 0; time.Now().Before(retryUntil); i++ {
		ok, err := s.Redeem(ctx, n)
		if ok {
			wins++
		}
		if err == nil && i >= 2 {
			break
		}
	}
	if wins != 1 {
		t.Fatalf("after thaw the grant was redeemed %d times; want exactly 1", wins)
	}
}
