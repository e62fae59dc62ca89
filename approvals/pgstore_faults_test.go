package approvals

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpsafe/mcpsafe/channel"
)

func schemaVersion(t *testing.T, dbURL string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var v int
	if err := c.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM mcpsafe_approvals_schema`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// Replicas starting together on an empty database all start: the advisory
// lock makes one migrate and the others find the schema done.
func TestPGReplicasMigrateTogether(t *testing.T) {
	u := pgTestDB(t)
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := openStore(u)
			if err == nil {
				s.close()
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a replica starting with the others: %v", err)
		}
	}
	if v := schemaVersion(t, u); v != len(pgMigrations) {
		t.Fatalf("schema version %d, want %d", v, len(pgMigrations))
	}
}

// A database whose schema is newer than the binary knows is refused, with
// a message that says what to do; nothing is changed.
func TestPGNewerSchemaRefused(t *testing.T) {
	u := pgTestDB(t)
	s, err := openStore(u)
	if err != nil {
		t.Fatal(err)
	}
	s.close()
	pgExec(t, u, `UPDATE mcpsafe_approvals_schema SET version = version + 1`)
	_, err = openStore(u)
	if !errors.Is(err, ErrSchemaNewer) || !strings.Contains(err.Error(), "run the newer mcpsafe") {
		t.Fatalf("a newer schema: %v", err)
	}
	if v := schemaVersion(t, u); v != len(pgMigrations)+1 {
		t.Fatalf("the refused start changed the schema version to %d", v)
	}
	_, err = NewService(ServiceOptions{Secret: testSecret, Approvers: testApprovers, Store: u})
	if !errors.Is(err, ErrSchemaNewer) {
		t.Fatalf("the service started on a newer schema: %v", err)
	}
}

// A migration that fails leaves the schema as it was: its DDL and its
// version bump are one transaction.
func TestPGFailedMigrationLeavesSchema(t *testing.T) {
	u := pgTestDB(t)
	s, err := openStore(u)
	if err != nil {
		t.Fatal(err)
	}
	s.close()
	saved := pgMigrations
	t.Cleanup(func() { pgMigrations = saved })
	pgMigrations = append(append([]string(nil), saved...),
		`CREATE TABLE mcpsafe_approvals_half (a integer); ALTER TABLE mcpsafe_approvals_requests ADD COLUMN half integer; SELECT 1/0`)
	if _, err := openStore(u); err == nil || !strings.Contains(err.Error(), "stays at version") {
		t.Fatalf("a failing migration: %v", err)
	}
	if v := schemaVersion(t, u); v != len(saved) {
		t.Fatalf("schema version %d after a failed migration, want %d", v, len(saved))
	}
	ctx := context.Background()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int
	c.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_name = 'mcpsafe_approvals_half'`).Scan(&n)
	var m int
	c.QueryRow(ctx, `SELECT count(*) FROM information_schema.columns WHERE table_name = 'mcpsafe_approvals_requests' AND column_name = 'half'`).Scan(&m)
	if n != 0 || m != 0 {
		t.Fatalf("a failed migration left %d table(s) and %d column(s) behind", n, m)
	}
	// Control: the same binary without the bad migration starts.
	pgMigrations = saved
	if s, err := openStore(u); err != nil {
		t.Fatalf("control: %v", err)
	} else {
		s.close()
	}
}

// killBackends terminates every connection to the database but the
// caller's own (what a failover or an operator's pg_terminate_backend
// does to a replica's pool).
func killBackends(t *testing.T, dbURL string) int {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A replica whose pooled connections are killed recovers by itself: the
// next decision succeeds (the step is retried once on a fresh connection,
// not refused), and a long poll still ends at once when the decision is
// made on another replica (the LISTEN connection comes back).
func TestPGKilledConnectionsRecover(t *testing.T) {
	rs := replicas(t, 2, ServiceOptions{})
	a, b := rs[0], rs[1]
	a.svc.pollEvery.Store(int64(time.Hour))
	ch := a.ask(testRequest("req-kill"))
	b.waitPending("req-kill")
	u := a.svc.opts.Store
	if n := killBackends(t, u); n < 2 {
		t.Fatalf("killed %d connections; the test needs the pools' and the listeners'", n)
	}
	// The first step after the kill is served, not refused.
	b.decide("req-kill", "approve", "alice", 200)
	decided := time.Now()
	r := wait(t, ch)
	if !r.d.Approved {
		t.Fatalf("after the kill: %+v %v", r.d, r.err)
	}
	if waited := time.Since(decided); waited > 5*time.Second {
		t.Fatalf("the long poll answered %s after the decision", waited)
	}
}

// tcpRelay forwards a local port to the test PostgreSQL server, and can
// be cut and restored: the store going down and coming back.
type tcpRelay struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	down   bool
}

func newRelay(t *testing.T, target string) *tcpRelay {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &tcpRelay{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); r.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.mu.Lock()
			if r.down {
				r.mu.Unlock()
				c.Close()
				continue
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				r.mu.Unlock()
				c.Close()
				continue
			}
			r.conns = append(r.conns, c, up)
			r.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
	return r
}

func (r *tcpRelay) cut() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = true
	for _, c := range r.conns {
		c.Close()
	}
	r.conns = nil
}

func (r *tcpRelay) restore() {
	r.mu.Lock()
	r.down = false
	r.mu.Unlock()
}

// A store that is down means not approved and a clear 503 on every path,
// never an approval; when it comes back the replica serves again by
// itself.
func TestPGStoreDownRefuses(t *testing.T) {
	direct := pgTestDB(t)
	du, _ := url.Parse(direct)
	relay := newRelay(t, du.Host)
	du.Host = relay.ln.Addr().String()
	q := du.Query()
	q.Set("connect_timeout", "2")
	du.RawQuery = q.Encode()
	e := newEnv(t, ServiceOptions{Store: du.String()})
	ch := e.ask(testRequest("req-down"))
	e.waitPending("req-down")

	relay.cut()
	out := e.decide("req-down", "approve", "alice", http.StatusServiceUnavailable)
	if !strings.Contains(out["error"].(string), "store unavailable") {
		t.Fatalf("approve with the store down: %v", out)
	}
	r := wait(t, ch)
	if r.d.Approved || !errors.Is(r.err, channel.ErrUnavailable) {
		t.Fatalf("the waiting gate with the store down: %+v %v", r.d, r.err)
	}
	if r := wait(t, e.ask(testRequest("req-down-2"))); r.d.Approved || !strings.Contains(r.err.Error(), "503") {
		t.Fatalf("a new request with the store down: %+v %v", r.d, r.err)
	}
	if code, _ := e.api("GET", "/api/requests", "alice"); code != http.StatusServiceUnavailable {
		t.Fatalf("the API list with the store down: HTTP %d", code)
	}
	if code := httpGet(t, e.srv.URL+"/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz with the store down: %d", code)
	}
	if code := httpGet(t, e.srv.URL+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz with the store down: %d (the process is alive)", code)
	}

	relay.restore()
	waitFor(t, "the replica ready again when the store came back", func() bool { return httpGet(t, e.srv.URL+"/readyz") == http.StatusOK })
	// The request is still pending, nothing was approved while down.
	_, got := e.api("GET", "/api/requests/req-down", "alice")
	if got["status"] != channel.StatusPending {
		t.Fatalf("after the outage: %v", got)
	}
	e.decide("req-down", "deny", "alice", 200)
}

func httpGet(t *testing.T, u string) int {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Renewing a long poll's hold tells no replica anything (each renewal
// would otherwise refresh every open page); a real change does.
// Notifications arrive in commit order, so the first one heard after a
// renewal and a change of another request names that other request.
func TestPGLeaseRenewalIsQuiet(t *testing.T) {
	u := pgTestDB(t)
	st, err := openStore(u)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	ctx := context.Background()
	mustAdmit(t, st, "held", time.Hour)
	mustAdmit(t, st, "marker", time.Hour)
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `LISTEN `+pgNotifyChannel); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		id   string
		loud bool
	}{{"held", false}, {"marker", true}} {
		if _, err := st.update(ctx, step.id, func(cur record, now time.Time) (*record, error) {
			next := cur
			next.PollBy, next.PollUntil = "tok", now.Add(time.Minute)
			if step.loud {
				next.Status, next.DecidedAt = channel.StatusDenied, now
			}
			return &next, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	n, err := c.WaitForNotification(wctx)
	if err != nil || n.Payload != "marker" {
		t.Fatalf("first notification: %+v %v; want the denial of marker, not the renewal of held", n, err)
	}
}
