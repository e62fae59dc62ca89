package ledger

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// faultTimeout is the per-operation bound the fault tests configure; bound is
// how long any refused call may take (generous: 2 shared cores).
const (
	faultTimeout = 300 * time.Millisecond
	bound        = 3 * time.Second
	// freezeTimeout is the ledger_timeout of TestServerFreezesMidRun. It
	// also bounds that test's setup through the proxy (PostgreSQL: connect,
	// fork a backend, CREATE TABLE and INDEX with their WAL fsyncs), which
	// takes 35 ms idle, 145 ms at load 8 under -race, and more when other
	// suites fsync; 300 ms failed once under load.
	freezeTimeout = time.Second
)

// silentServer accepts connections and never reads or answers, like a
// stuck server or a black-holing firewall that completed the handshake.
func silentServer(t *testing.T) string {
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

// freezer is a TCP proxy to a real server that can stop forwarding. Bytes
// that arrive while frozen are dropped with their connection, so nothing
// sent during a freeze reaches the server later.
type freezer struct {
	ln     net.Listener
	target string
	frozen atomic.Bool
	thawed chan struct{}
	mu     sync.Mutex
}

func newFreezer(t *testing.T, target string) *freezer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{ln: ln, target: target, thawed: make(chan struct{})}
	close(f.thawed)
	go f.serve()
	t.Cleanup(func() { ln.Close() })
	return f
}

func (f *freezer) addr() string { return f.ln.Addr().String() }

func (f *freezer) freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frozen.Store(true)
	f.thawed = make(chan struct{})
}

func (f *freezer) thaw() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frozen.Store(false)
	close(f.thawed)
}

func (f *freezer) serve() {
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

func (f *freezer) pipe(dst, src net.Conn) {
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
	u := strings.TrimPrefix(strings.TrimPrefix(raw, "redis://"), "postgres://")
	if at := strings.LastIndex(u, "@"); at >= 0 {
		u = u[at+1:]
	}
	u, _, _ = strings.Cut(u, "/")
	u, _, _ = strings.Cut(u, "?")
	return u
}

func replaceHost(raw, from, to string) string { return strings.Replace(raw, from, to, 1) }

// timed runs f and fails the test if it took longer than bound.
func timed(t *testing.T, what string, f func()) {
	t.Helper()
	start := time.Now()
	f()
	if d := time.Since(start); d > bound {
		t.Errorf("%s took %v; every refusal must come within %v", what, d, bound)
	}
}

func TestOpenDeadServerRefuses(t *testing.T) {
	dead := map[string]string{
		"redis":    "redis://127.0.0.1:1/0",
		"postgres": "postgres://postgres@127.0.0.1:1/test?sslmode=disable",
	}
	silent := silentServer(t)
	hung := map[string]string{
		"redis":    "redis://" + silent + "/0",
		"postgres": "postgres://postgres@" + silent + "/test?sslmode=disable",
	}
	for kind, urls := range map[string]map[string]string{"dead port": dead, "silent server": hung} {
		for store, u := range urls {
			t.Run(kind+"/"+store, func(t *testing.T) {
				t.Parallel()
				u := withParams(u, "ledger_timeout", faultTimeout.String())
				timed(t, "Open", func() {
					s, err := Open(context.Background(), u)
					if err == nil {
						s.Close()
						t.Fatal("Open succeeded against a server that cannot answer")
					}
					if !errors.Is(err, ErrUnavailable) {
						t.Fatalf("Open error %v does not wrap ErrUnavailable", err)
					}
				})
			})
		}
	}
}

// TestServerFreezesMidRun opens a store through a proxy, freezes the proxy
// (the server stops answering), checks that every call is refused within the
// bound and never approves, then thaws it and checks the service resumes and
// the grant is still redeemable exactly once.
func TestServerFreezesMidRun(t *testing.T) {
	targets := map[string]func(t *testing.T) string{
		"redis":    func(t *testing.T) string { u, _, _ := redisBackend(t); return u },
		"postgres": func(t *testing.T) string { u, _, _ := postgresBackend(t); return u },
	}
	for name, target := range targets {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			real := target(t)
			hp := hostPort(t, real)
			fz := newFreezer(t, hp)
			u := withParams(replaceHost(real, hp, fz.addr()), "ledger_timeout", freezeTimeout.String())
			ctx := context.Background()
			s, err := Open(ctx, u)
			if err != nil {
				t.Fatalf("Open through proxy: %v", err)
			}
			defer s.Close()
			n := newNonce()
			if err := s.Issue(ctx, n, time.Now().Add(time.Hour)); err != nil {
				t.Fatalf("Issue: %v", err)
			}
			fz.freeze()
			for i := 0; i < 3; i++ {
				timed(t, "Redeem while frozen", func() {
					ok, err := s.Redeem(ctx, n)
					if ok || !errors.Is(err, ErrUnavailable) {
						t.Fatalf("Redeem while frozen = %v, %v; want false, ErrUnavailable", ok, err)
					}
				})
				timed(t, "Issue while frozen", func() {
					if err := s.Issue(ctx, newNonce(), time.Now().Add(time.Hour)); !errors.Is(err, ErrUnavailable) {
						t.Fatalf("Issue while frozen = %v; want ErrUnavailable", err)
					}
				})
			}
			fz.thaw()
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
		})
	}
}

func TestRedisForeignValuesNeverApprove(t *testing.T) {
	u, c, prefix := redisBackend(t)
	u = withParams(u, "ledger_timeout", faultTimeout.String())
	ctx := context.Background()
	s, err := Open(ctx, u)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	future := time.Now().Add(time.Hour).UnixNano()
	past := time.Now().Add(-time.Hour).UnixNano()
	cases := []struct {
		name    string
		value   string
		wantErr bool
	}{
		{"garbage", "garbage", true},
		{"empty", "", true},
		{"bare marker", redisMarker, true},
		{"marker without space", strings.TrimSpace(redisMarker) + itoa(future), true},
		{"other version", "mcpsafe-ledger/2 " + itoa(future), true},
		{"non-number expiry", redisMarker + "soon", true},
		{"leading zero", redisMarker + "0" + itoa(future), true},
		{"plus sign", redisMarker + "+" + itoa(future), true},
		{"trailing junk", redisMarker + itoa(future) + " x", true},
		{"overflow", redisMarker + "99999999999999999999", true},
		{"expired marker without TTL", redisMarker + itoa(past), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := newNonce()
			if err := c.Set(ctx, prefix+n, tc.value, time.Hour).Err(); err != nil {
				t.Fatal(err)
			}
			ok, err := s.Redeem(ctx, n)
			if ok {
				t.Fatalf("Redeem approved a key holding %q", tc.value)
			}
			if tc.wantErr && !errors.Is(err, ErrUnavailable) {
				t.Fatalf("Redeem(%q) error = %v; want ErrUnavailable", tc.value, err)
			}
			if !tc.wantErr && err != nil {
				t.Fatalf("Redeem(%q) error = %v; want nil", tc.value, err)
			}
		})
	}
	t.Run("wrong type", func(t *testing.T) {
		n := newNonce()
		if err := c.RPush(ctx, prefix+n, "x").Err(); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.Redeem(ctx, n); ok || !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Redeem(list key) = %v, %v; want false, ErrUnavailable", ok, err)
		}
	})
	t.Run("control: our marker written directly", func(t *testing.T) {
		n := newNonce()
		if err := c.Set(ctx, prefix+n, redisMarker+itoa(future), time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.Redeem(ctx, n); !ok || err != nil {
			t.Fatalf("Redeem = %v, %v; want true, nil", ok, err)
		}
	})
	t.Run("issued key carries a TTL", func(t *testing.T) {
		n := newNonce()
		if err := s.Issue(ctx, n, time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		ttl, err := c.PTTL(ctx, prefix+n).Result()
		if err != nil || ttl <= 0 || ttl > time.Minute+time.Millisecond {
			t.Fatalf("PTTL = %v, %v; want (0, 1m]", ttl, err)
		}
	})
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func TestMemoryCapacity(t *testing.T) {
	ctx := context.Background()
	m := NewMemory(3)
	hour := time.Now().Add(time.Hour)
	old := []string{newNonce(), newNonce(), newNonce()}
	for _, n := range old {
		if err := m.Issue(ctx, n, hour); err != nil {
			t.Fatalf("Issue: %v", err)
		}
	}
	extra := newNonce()
	if err := m.Issue(ctx, extra, hour); !errors.Is(err, ErrFull) {
		t.Fatalf("Issue over capacity = %v; want ErrFull", err)
	}
	if ok, _ := m.Redeem(ctx, extra); ok {
		t.Fatal("a refused grant was redeemable")
	}
	if ok, err := m.Redeem(ctx, old[0]); !ok || err != nil {
		t.Fatalf("old grant after ErrFull: Redeem = %v, %v; want true, nil", ok, err)
	}
	// Redeeming freed a slot.
	if err := m.Issue(ctx, extra, hour); err != nil {
		t.Fatalf("Issue after a redemption freed a slot: %v", err)
	}
	for _, n := range append(old[1:], extra) {
		if ok, err := m.Redeem(ctx, n); !ok || err != nil {
			t.Fatalf("Redeem(%s) = %v, %v; want true, nil", n, ok, err)
		}
	}

	// Expired grants are purged to make room; live ones are not.
	m = NewMemory(2)
	now := time.Now()
	m.now = func() time.Time { return now }
	if err := m.Issue(ctx, "short", now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := m.Issue(ctx, "long", hour); err != nil {
		t.Fatal(err)
	}
	if err := m.Issue(ctx, "new", hour); !errors.Is(err, ErrFull) {
		t.Fatalf("Issue while full of live grants = %v; want ErrFull", err)
	}
	now = now.Add(time.Minute)
	if err := m.Issue(ctx, "new", hour); err != nil {
		t.Fatalf("Issue after one grant expired = %v; want nil", err)
	}
	if m.Len() != 2 {
		t.Fatalf("Len = %d; want 2 (expired grant purged)", m.Len())
	}
	for _, n := range []string{"long", "new"} {
		if ok, err := m.Redeem(ctx, n); !ok || err != nil {
			t.Fatalf("Redeem(%s) = %v, %v", n, ok, err)
		}
	}
	if NewMemory(0).capacity != DefaultCapacity || NewMemory(-5).capacity != DefaultCapacity {
		t.Fatal("non-positive capacity does not select DefaultCapacity")
	}
}

func TestOpenRejectsBadURLs(t *testing.T) {
	cases := []string{
		"ftp://127.0.0.1/x",
		"memory:x",
		"memory://",
		"mem:",
		"file:",
		"file://otherhost/tmp/x.db",
		"file:/tmp/x.db?mode=ro",
		"file:/tmp/x.db?ledger_prefix=a",
		"file:/tmp/x%3F.db",
		"file:/tmp/x.db?ledger_timeout=0s",
		"file:/tmp/x.db?ledger_timeout=-1s",
		"file:/tmp/x.db?ledger_timeout=soon",
		"file:/tmp/x.db?ledger_bogus=1",
		"file:/tmp/x.db?ledger_timeout=1s&ledger_timeout=2s",
		"redis://127.0.0.1:1/0?ledger_table=t",
		"redis://127.0.0.1:1/0?bogus_option=1",
		"postgres://postgres@127.0.0.1:1/test?ledger_prefix=p",
		"postgres://postgres@127.0.0.1:1/test?ledger_table=Bad-Name",
		"postgres://postgres@127.0.0.1:1/test?ledger_table=x;drop",
		"postgresql://postgres@127.0.0.1:1/test?ledger_table=" + strings.Repeat("a", 64),
		"postgres://postgres@127.0.0.1:1/test?sslmode=bogus",
	}
	for _, u := range cases {
		t.Run(u, func(t *testing.T) {
			s, err := Open(context.Background(), u)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%q) succeeded", u)
			}
			// A configuration error must be reported as one, before any
			// connection attempt, not disguised as an outage.
			if errors.Is(err, ErrUnavailable) {
				t.Fatalf("Open(%q) = %v; want a configuration error, not ErrUnavailable", u, err)
			}
		})
	}
	t.Run("control", func(t *testing.T) {
		for _, u := range []string{"", "memory:", "MEMORY:", "file:" + t.TempDir() + "/a.db?ledger_timeout=1s&ledger_sweep=1h"} {
			s, err := Open(context.Background(), u)
			if err != nil {
				t.Fatalf("Open(%q): %v", u, err)
			}
			s.Close()
		}
	})
	t.Run("password not in errors", func(t *testing.T) {
		for _, u := range []string{
			"redis://user:hunter2secret@127.0.0.1:1/0?ledger_timeout=200ms",
			"postgres://postgres:hunter2secret@127.0.0.1:1/test?ledger_timeout=200ms",
			"postgres://postgres:hunter2secret@127.0.0.1:1/test?sslmode=bogus",
		} {
			_, err := Open(context.Background(), u)
			if err == nil || strings.Contains(err.Error(), "hunter2secret") {
				t.Fatalf("Open error %v leaks the password", err)
			}
		}
	})
}

// TestMemoryExpiryBoundary pins the exclusive boundary: valid while
// now < expires.
func TestMemoryExpiryBoundary(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	exp := base.Add(time.Minute)
	cases := []struct {
		name string
		at   time.Time
		want bool
	}{
		{"1ns before expiry", exp.Add(-time.Nanosecond), true},
		{"at expiry", exp, false},
		{"1ns after expiry", exp.Add(time.Nanosecond), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMemory(0)
			now := base
			m.now = func() time.Time { return now }
			if err := m.Issue(context.Background(), "n", exp); err != nil {
				t.Fatal(err)
			}
			now = tc.at
			if ok, err := m.Redeem(context.Background(), "n"); ok != tc.want || err != nil {
				t.Fatalf("Redeem at %v = %v, %v; want %v, nil", tc.at.Sub(exp), ok, err, tc.want)
			}
		})
	}
	m := NewMemory(0)
	m.now = func() time.Time { return exp }
	if err := m.Issue(context.Background(), "n", exp); !errors.Is(err, ErrExpired) {
		t.Fatalf("Issue with expires == now = %v; want ErrExpired", err)
	}
}
