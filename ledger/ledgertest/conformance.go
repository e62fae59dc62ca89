package ledgertest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/ledger"
)

// A Backend opens stores for one test. open may be called several times;
// every store it returns shares one backend (same file, Redis prefix,
// table), as replicas do.
type Backend func(t *testing.T) (open func(t *testing.T) ledger.Store)

// ConformanceTimeout is the ledger_timeout URLBackend sets, in place of the
// 2 s default: the conformance suite tests semantics, and under -race on a
// loaded 2-core machine 1,000 redemptions queued on one SQLite connection
// can take longer than 2 s, and the late ones would (correctly) fail
// closed. Each backend tests the bound itself.
const ConformanceTimeout = "30s"

// URLBackend is the Backend whose stores ledger.Open opens from the URL
// url(t) returns (once per test), with ledger_timeout set to
// ConformanceTimeout. The URL's backend must be linked in.
func URLBackend(url func(t *testing.T) string) Backend {
	return func(t *testing.T) func(t *testing.T) ledger.Store {
		u := WithParams(url(t), "ledger_timeout", ConformanceTimeout)
		return func(t *testing.T) ledger.Store {
			t.Helper()
			s, err := ledger.Open(context.Background(), u)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	}
}

// Conformance is the one suite every store must pass unchanged: one-time
// grants redeemed exactly once (also raced by 1,000 goroutines and over two
// stores on one backend), expiry, invalid nonces, cancelled contexts and
// closed stores refused, and standing grants counted exactly, judged by
// expiry, revocable, listed by scope, their ends claimed once. It sleeps
// (briefly) to let grants expire by the real clock, which a store's
// backend judges.
func Conformance(t *testing.T, newBackend Backend) {
	ctx := context.Background()
	hour := func() time.Time { return time.Now().Add(time.Hour) }
	t.Run("standing", func(t *testing.T) { standingConformance(t, newBackend) })
	t.Run("outcomes", func(t *testing.T) { outcomeConformance(t, newBackend) })

	t.Run("issue then redeem once", func(t *testing.T) {
		s := newBackend(t)(t)
		n := NewNonce()
		if err := s.Issue(ctx, n, hour()); err != nil {
			t.Fatalf("Issue: %v", err)
		}
		for i, want := range []bool{true, false, false} {
			ok, err := s.Redeem(ctx, n)
			if err != nil || ok != want {
				t.Fatalf("Redeem #%d = %v, %v; want %v, nil", i+1, ok, err, want)
			}
		}
	})

	t.Run("unknown nonce", func(t *testing.T) {
		s := newBackend(t)(t)
		if ok, err := s.Redeem(ctx, NewNonce()); ok || err != nil {
			t.Fatalf("Redeem(unknown) = %v, %v; want false, nil", ok, err)
		}
	})

	t.Run("expired not redeemable", func(t *testing.T) {
		s := newBackend(t)(t)
		expired, live := NewNonce(), NewNonce()
		if err := s.Issue(ctx, expired, time.Now().Add(40*time.Millisecond)); err != nil {
			t.Fatalf("Issue: %v", err)
		}
		if err := s.Issue(ctx, live, hour()); err != nil {
			t.Fatalf("Issue: %v", err)
		}
		time.Sleep(80 * time.Millisecond)
		if ok, err := s.Redeem(ctx, expired); ok || err != nil {
			t.Fatalf("Redeem(expired) = %v, %v; want false, nil", ok, err)
		}
		if ok, err := s.Redeem(ctx, live); !ok || err != nil {
			t.Fatalf("control: Redeem(live) = %v, %v; want true, nil", ok, err)
		}
	})

	t.Run("double issue", func(t *testing.T) {
		s := newBackend(t)(t)
		n := NewNonce()
		first := hour()
		if err := s.Issue(ctx, n, first); err != nil {
			t.Fatalf("Issue: %v", err)
		}
		if err := s.Issue(ctx, n, first.Add(time.Hour)); !errors.Is(err, ledger.ErrExists) {
			t.Fatalf("second Issue = %v; want ledger.ErrExists", err)
		}
		if ok, err := s.Redeem(ctx, n); !ok || err != nil {
			t.Fatalf("Redeem = %v, %v; want true, nil", ok, err)
		}
		if ok, _ := s.Redeem(ctx, n); ok {
			t.Fatal("a refused second Issue created a second redemption")
		}
	})

	t.Run("issue in the past", func(t *testing.T) {
		s := newBackend(t)(t)
		for _, exp := range []time.Time{time.Now().Add(-time.Second), time.Now(), {}} {
			n := NewNonce()
			if err := s.Issue(ctx, n, exp); !errors.Is(err, ledger.ErrExpired) {
				t.Fatalf("Issue(expires=%v) = %v; want ledger.ErrExpired", exp, err)
			}
			if ok, err := s.Redeem(ctx, n); ok || err != nil {
				t.Fatalf("Redeem after refused Issue = %v, %v; want false, nil", ok, err)
			}
		}
	})

	t.Run("invalid nonces", func(t *testing.T) {
		s := newBackend(t)(t)
		for _, n := range InvalidNonces() {
			if err := s.Issue(ctx, n, hour()); !errors.Is(err, ledger.ErrInvalidNonce) {
				t.Errorf("Issue(%q) = %v; want ledger.ErrInvalidNonce", n, err)
			}
			if ok, err := s.Redeem(ctx, n); ok || !errors.Is(err, ledger.ErrInvalidNonce) {
				t.Errorf("Redeem(%q) = %v, %v; want false, ledger.ErrInvalidNonce", n, ok, err)
			}
		}
		for _, n := range ValidNonces() {
			if err := s.Issue(ctx, n, hour()); err != nil {
				t.Errorf("control: Issue(%q) = %v", n, err)
			}
			if ok, err := s.Redeem(ctx, n); !ok || err != nil {
				t.Errorf("control: Redeem(%q) = %v, %v", n, ok, err)
			}
		}
	})

	t.Run("1000 goroutines race one nonce", func(t *testing.T) {
		s := newBackend(t)(t)
		n := NewNonce()
		if err := s.Issue(ctx, n, hour()); err != nil {
			t.Fatalf("Issue: %v", err)
		}
		wins, errs := Race(ctx, []ledger.Store{s}, n, 1000)
		if wins != 1 || errs != 0 {
			t.Fatalf("wins = %d, errors = %d; want exactly 1 win, 0 errors", wins, errs)
		}
	})

	t.Run("many nonces concurrently", func(t *testing.T) {
		s := newBackend(t)(t)
		const workers, each = 16, 25
		var wg sync.WaitGroup
		var wins, bad atomic.Int64
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < each; i++ {
					n := NewNonce()
					if err := s.Issue(ctx, n, hour()); err != nil {
						bad.Add(1)
						continue
					}
					ok1, err1 := s.Redeem(ctx, n)
					ok2, err2 := s.Redeem(ctx, n)
					if err1 != nil || err2 != nil || !ok1 || ok2 {
						bad.Add(1)
					}
					if ok1 {
						wins.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		if wins.Load() != workers*each || bad.Load() != 0 {
			t.Fatalf("wins = %d, bad = %d; want %d, 0", wins.Load(), bad.Load(), workers*each)
		}
	})

	t.Run("two stores on one backend", func(t *testing.T) {
		open := newBackend(t)
		a, b := open(t), open(t)
		const nonces = 50
		list := make([]string, nonces)
		for i := range list {
			list[i] = NewNonce()
			issuer := a
			if i%2 == 1 {
				issuer = b
			}
			if err := issuer.Issue(ctx, list[i], hour()); err != nil {
				t.Fatalf("Issue: %v", err)
			}
		}
		// The other store sees the issue: ledger.ErrExists across instances.
		if err := b.Issue(ctx, list[0], hour()); !errors.Is(err, ledger.ErrExists) {
			t.Fatalf("Issue via b of a nonce issued via a = %v; want ledger.ErrExists", err)
		}
		for _, n := range list {
			wins, errs := Race(ctx, []ledger.Store{a, b}, n, 40)
			if wins != 1 || errs != 0 {
				t.Fatalf("nonce %s: wins = %d, errors = %d; want 1, 0", n, wins, errs)
			}
		}
	})

	t.Run("expired nonce may be issued again", func(t *testing.T) {
		s := newBackend(t)(t)
		n := NewNonce()
		if err := s.Issue(ctx, n, time.Now().Add(30*time.Millisecond)); err != nil {
			t.Fatalf("Issue: %v", err)
		}
		time.Sleep(60 * time.Millisecond)
		if err := s.Issue(ctx, n, hour()); err != nil {
			t.Fatalf("re-Issue after expiry: %v", err)
		}
		if ok, err := s.Redeem(ctx, n); !ok || err != nil {
			t.Fatalf("Redeem = %v, %v; want true, nil", ok, err)
		}
	})

	t.Run("cancelled context refuses", func(t *testing.T) {
		s := newBackend(t)(t)
		n := NewNonce()
		if err := s.Issue(ctx, n, hour()); err != nil {
			t.Fatalf("Issue: %v", err)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := s.Issue(cctx, NewNonce(), hour()); !errors.Is(err, ledger.ErrUnavailable) {
			t.Fatalf("Issue(cancelled) = %v; want ledger.ErrUnavailable", err)
		}
		if ok, err := s.Redeem(cctx, n); ok || !errors.Is(err, ledger.ErrUnavailable) {
			t.Fatalf("Redeem(cancelled) = %v, %v; want false, ledger.ErrUnavailable", ok, err)
		}
		if ok, err := s.Redeem(ctx, n); !ok || err != nil {
			t.Fatalf("control: Redeem = %v, %v; want true, nil", ok, err)
		}
	})

	t.Run("closed store refuses", func(t *testing.T) {
		s := newBackend(t)(t)
		n := NewNonce()
		if err := s.Issue(ctx, n, hour()); err != nil {
			t.Fatalf("Issue: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if ok, err := s.Redeem(ctx, n); ok || !errors.Is(err, ledger.ErrClosed) || !errors.Is(err, ledger.ErrUnavailable) {
			t.Fatalf("Redeem after Close = %v, %v; want false, ledger.ErrClosed", ok, err)
		}
		if err := s.Issue(ctx, NewNonce(), hour()); !errors.Is(err, ledger.ErrClosed) {
			t.Fatalf("Issue after Close = %v; want ledger.ErrClosed", err)
		}
	})
}

// Race has n goroutines, spread over stores, redeem one nonce at once,
// and counts their wins and errors.
func Race(ctx context.Context, stores []ledger.Store, nonce string, n int) (wins, errs int64) {
	var wg sync.WaitGroup
	var w, e atomic.Int64
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(s ledger.Store) {
			defer wg.Done()
			<-start
			ok, err := s.Redeem(ctx, nonce)
			if err != nil {
				e.Add(1)
			}
			if ok {
				w.Add(1)
			}
		}(stores[i%len(stores)])
	}
	close(start)
	wg.Wait()
	return w.Load(), e.Load()
}

// standingOf is the store's standing grants, through Store.Standing (what
// the gate calls); every store of this module keeps them.
func standingOf(t *testing.T, s ledger.Store) ledger.StandingStore {
	t.Helper()
	ss := s.Standing()
	if ss == nil {
		t.Fatalf("%T keeps no standing grants (Standing returned nil)", s)
	}
	return ss
}

// standingConformance: standing grants are counted exactly, judged by
// expiry (exclusive), revocable, listed by scope, on every store.
func standingConformance(t *testing.T, newBackend Backend) {
	ctx := context.Background()
	hour := func() time.Time { return time.Now().Add(time.Hour) }
	put := func(t *testing.T, s ledger.StandingStore, scope string, uses int, exp time.Time) string {
		t.Helper()
		id := NewNonce()
		if err := s.PutStanding(ctx, ledger.Standing{ID: id, Scope: scope, Expires: exp, Uses: uses, Data: []byte("d:" + id)}); err != nil {
			t.Fatalf("PutStanding: %v", err)
		}
		return id
	}

	t.Run("uses counted to zero", func(t *testing.T) {
		s := standingOf(t, newBackend(t)(t))
		id := put(t, s, NewNonce(), 3, hour())
		for i, want := range []int{2, 1, 0} {
			left, ok, err := s.UseStanding(ctx, id)
			if err != nil || !ok || left != want {
				t.Fatalf("use #%d = %d, %v, %v; want %d, true, nil", i+1, left, ok, err, want)
			}
		}
		if _, ok, err := s.UseStanding(ctx, id); ok || err != nil {
			t.Fatalf("use after the last = %v, %v; want false, nil", ok, err)
		}
		if _, ok, err := s.UseStanding(ctx, NewNonce()); ok || err != nil {
			t.Fatalf("use of unknown = %v, %v; want false, nil", ok, err)
		}
	})

	t.Run("list by scope", func(t *testing.T) {
		s := standingOf(t, newBackend(t)(t))
		a, b := NewNonce(), NewNonce()
		ida := put(t, s, a, 2, hour())
		idb := put(t, s, b, 1, hour())
		got, err := s.StandingFor(ctx, a)
		if err != nil || len(got) != 1 || got[0].ID != ida || got[0].Uses != 2 || string(got[0].Data) != "d:"+ida || got[0].Scope != a {
			t.Fatalf("StandingFor(a) = %+v, %v; want only %s with 2 uses and its data", got, err, ida)
		}
		if _, ok, _ := s.UseStanding(ctx, idb); !ok {
			t.Fatal("control: use of b failed")
		}
		// Used up: no longer listed.
		if got, err := s.StandingFor(ctx, b); err != nil || len(got) != 0 {
			t.Fatalf("StandingFor(b) after its last use = %+v, %v; want none", got, err)
		}
		all, err := s.StandingFor(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, g := range all {
			found = found || g.ID == ida
			if g.ID == idb {
				t.Fatalf("used-up grant listed among all: %+v", g)
			}
		}
		if !found {
			t.Fatalf("StandingFor(\"\") = %+v; want it to include %s", all, ida)
		}
	})

	t.Run("expiry is exclusive", func(t *testing.T) {
		s := standingOf(t, newBackend(t)(t))
		scope := NewNonce()
		short := put(t, s, scope, 5, time.Now().Add(40*time.Millisecond))
		live := put(t, s, scope, 5, hour())
		time.Sleep(80 * time.Millisecond)
		if _, ok, err := s.UseStanding(ctx, short); ok || err != nil {
			t.Fatalf("use of expired = %v, %v; want false, nil", ok, err)
		}
		if got, _ := s.StandingFor(ctx, scope); len(got) != 1 || got[0].ID != live {
			t.Fatalf("StandingFor = %+v; want only the live grant", got)
		}
		if _, ok, err := s.UseStanding(ctx, live); !ok || err != nil {
			t.Fatalf("control: use of live = %v, %v", ok, err)
		}
	})

	t.Run("revoke", func(t *testing.T) {
		open := newBackend(t)
		a, b := standingOf(t, open(t)), standingOf(t, open(t))
		scope := NewNonce()
		id := put(t, a, scope, 5, hour())
		other := put(t, a, scope, 5, hour())
		if ok, err := b.RevokeStanding(ctx, id, ledger.Revocation{By: "alice via the test"}); !ok || err != nil {
			t.Fatalf("RevokeStanding via b = %v, %v; want true, nil", ok, err)
		}
		// Effective on the other store at once.
		if _, ok, err := a.UseStanding(ctx, id); ok || err != nil {
			t.Fatalf("use after revoke = %v, %v; want false, nil", ok, err)
		}
		if ok, err := a.RevokeStanding(ctx, id, ledger.Revocation{}); ok || err != nil {
			t.Fatalf("second revoke = %v, %v; want false, nil", ok, err)
		}
		if _, ok, err := a.UseStanding(ctx, other); !ok || err != nil {
			t.Fatalf("control: the other grant = %v, %v; want usable", ok, err)
		}
		if got, _ := b.StandingFor(ctx, scope); len(got) != 1 || got[0].ID != other {
			t.Fatalf("StandingFor after revoke = %+v; want only %s", got, other)
		}
	})

	t.Run("invalid puts", func(t *testing.T) {
		s := standingOf(t, newBackend(t)(t))
		id := put(t, s, NewNonce(), 1, hour())
		for name, c := range map[string]struct {
			st   ledger.Standing
			want error
		}{
			"existing id":  {ledger.Standing{ID: id, Scope: NewNonce(), Expires: hour(), Uses: 9}, ledger.ErrExists},
			"zero uses":    {ledger.Standing{ID: NewNonce(), Scope: NewNonce(), Expires: hour(), Uses: 0}, ledger.ErrInvalidStanding},
			"too many":     {ledger.Standing{ID: NewNonce(), Scope: NewNonce(), Expires: hour(), Uses: ledger.MaxStandingUses + 1}, ledger.ErrInvalidStanding},
			"past expiry":  {ledger.Standing{ID: NewNonce(), Scope: NewNonce(), Expires: time.Now(), Uses: 1}, ledger.ErrExpired},
			"bad id":       {ledger.Standing{ID: "a b", Scope: NewNonce(), Expires: hour(), Uses: 1}, ledger.ErrInvalidNonce},
			"bad scope":    {ledger.Standing{ID: NewNonce(), Scope: "x:y", Expires: hour(), Uses: 1}, ledger.ErrInvalidNonce},
			"data too big": {ledger.Standing{ID: NewNonce(), Scope: NewNonce(), Expires: hour(), Uses: 1, Data: make([]byte, ledger.MaxStandingData+1)}, ledger.ErrInvalidStanding},
		} {
			if err := s.PutStanding(ctx, c.st); !errors.Is(err, c.want) {
				t.Errorf("%s: PutStanding = %v; want %v", name, err, c.want)
			}
		}
		// The refused re-put did not reset the count.
		if _, ok, _ := s.UseStanding(ctx, id); !ok {
			t.Fatal("control: first use failed")
		}
		if _, ok, _ := s.UseStanding(ctx, id); ok {
			t.Fatal("a refused PutStanding of an existing id added uses")
		}
	})

	t.Run("K uses raced over two stores", func(t *testing.T) {
		open := newBackend(t)
		stores := []ledger.StandingStore{standingOf(t, open(t)), standingOf(t, open(t))}
		const k, clients = 7, 200
		id := put(t, stores[0], NewNonce(), k, hour())
		var wg sync.WaitGroup
		var wins, errs atomic.Int64
		start := make(chan struct{})
		for i := 0; i < clients; i++ {
			wg.Add(1)
			go func(s ledger.StandingStore) {
				defer wg.Done()
				<-start
				_, ok, err := s.UseStanding(ctx, id)
				if err != nil {
					errs.Add(1)
				}
				if ok {
					wins.Add(1)
				}
			}(stores[i%2])
		}
		close(start)
		wg.Wait()
		if wins.Load() != k || errs.Load() != 0 {
			t.Fatalf("wins = %d, errors = %d; want exactly %d, 0", wins.Load(), errs.Load(), k)
		}
	})

	t.Run("ends kept until claimed, claimed once", func(t *testing.T) {
		open := newBackend(t)
		a, b := standingOf(t, open(t)), standingOf(t, open(t))
		scope := NewNonce()
		expired := put(t, a, scope, 5, time.Now().Add(40*time.Millisecond))
		usedUp := put(t, a, scope, 1, hour())
		revoked := put(t, a, scope, 5, hour())
		live := put(t, a, scope, 5, hour())
		if _, ok, err := a.UseStanding(ctx, usedUp); !ok || err != nil {
			t.Fatalf("the one use = %v, %v", ok, err)
		}
		before := time.Now()
		if ok, err := b.RevokeStanding(ctx, revoked, ledger.Revocation{By: "alice via the test"}); !ok || err != nil {
			t.Fatalf("RevokeStanding = %v, %v", ok, err)
		}
		time.Sleep(80 * time.Millisecond)
		want := map[string]string{expired: ledger.EndExpired, usedUp: ledger.EndUsedUp, revoked: ledger.EndRevoked}
		ends, err := b.EndedStanding(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]ledger.StandingEnd{}
		for _, e := range ends {
			got[e.ID] = e
		}
		if _, ok := got[live]; ok {
			t.Fatalf("a live grant is listed as ended: %+v", got[live])
		}
		for id, reason := range want {
			e, ok := got[id]
			if !ok || e.Reason != reason || e.Scope != scope || string(e.Data) != "d:"+id {
				t.Fatalf("end of %s = %+v (listed %v); want reason %s with its scope and data", id, e, ok, reason)
			}
		}
		if e := got[revoked]; e.By != "alice via the test" || e.At.Before(before.Add(-time.Second)) || e.At.After(time.Now().Add(time.Second)) {
			t.Fatalf("revocation end = %+v; want who and when", e)
		}
		// Tombstones are never usable nor listed as live.
		for id := range want {
			if _, ok, err := a.UseStanding(ctx, id); ok || err != nil {
				t.Fatalf("use of ended %s = %v, %v; want false, nil", want[id], ok, err)
			}
		}
		if l, _ := a.StandingFor(ctx, scope); len(l) != 1 || l[0].ID != live {
			t.Fatalf("StandingFor = %+v; want only the live grant", l)
		}
		// Control: claiming a live grant fails and leaves it whole.
		if _, ok, err := a.ClaimStandingEnd(ctx, live); ok || err != nil {
			t.Fatalf("claim of a live grant = %v, %v; want false, nil", ok, err)
		}
		if left, ok, err := a.UseStanding(ctx, live); !ok || err != nil || left != 4 {
			t.Fatalf("use of live after a claim attempt = %d, %v, %v; want 4, true", left, ok, err)
		}
		for id, reason := range want {
			e, ok, err := a.ClaimStandingEnd(ctx, id)
			if !ok || err != nil || e.Reason != reason || e.ID != id || string(e.Data) != "d:"+id {
				t.Fatalf("claim of %s = %+v, %v, %v", reason, e, ok, err)
			}
			if _, ok, err := b.ClaimStandingEnd(ctx, id); ok || err != nil {
				t.Fatalf("second claim of %s = %v, %v; want false, nil", reason, ok, err)
			}
			// A claim gives nothing back: no use, no re-put, no revoke.
			if _, ok, err := b.UseStanding(ctx, id); ok || err != nil {
				t.Fatalf("use of claimed %s = %v, %v", reason, ok, err)
			}
			if err := b.PutStanding(ctx, ledger.Standing{ID: id, Scope: scope, Expires: hour(), Uses: 9}); !errors.Is(err, ledger.ErrExists) {
				t.Fatalf("re-put of claimed %s = %v; want ledger.ErrExists", reason, err)
			}
			if ok, err := b.RevokeStanding(ctx, id, ledger.Revocation{}); ok || err != nil {
				t.Fatalf("revoke of claimed %s = %v, %v", reason, ok, err)
			}
		}
		if ends, err := a.EndedStanding(ctx); err != nil || len(ends) != 0 {
			t.Fatalf("EndedStanding after claims = %+v, %v; want none", ends, err)
		}
		if _, ok, err := a.ClaimStandingEnd(ctx, NewNonce()); ok || err != nil {
			t.Fatalf("claim of unknown = %v, %v", ok, err)
		}
	})

	t.Run("revoke leaves an end as it was", func(t *testing.T) {
		s := standingOf(t, newBackend(t)(t))
		id := put(t, s, NewNonce(), 1, hour())
		if _, ok, _ := s.UseStanding(ctx, id); !ok {
			t.Fatal("control: the use failed")
		}
		if ok, err := s.RevokeStanding(ctx, id, ledger.Revocation{By: "late"}); ok || err != nil {
			t.Fatalf("revoke of a used-up grant = %v, %v; want false, nil", ok, err)
		}
		e, ok, err := s.ClaimStandingEnd(ctx, id)
		if !ok || err != nil || e.Reason != ledger.EndUsedUp || e.By != "" {
			t.Fatalf("claim = %+v, %v, %v; want used-up by nobody", e, ok, err)
		}
	})

	t.Run("invalid revocations", func(t *testing.T) {
		s := standingOf(t, newBackend(t)(t))
		id := put(t, s, NewNonce(), 2, hour())
		for name, r := range map[string]ledger.Revocation{
			"unknown reason": {Reason: ledger.EndExpired},
			"by too long":    {By: string(make([]byte, ledger.MaxRevokedBy+1))},
		} {
			if ok, err := s.RevokeStanding(ctx, id, r); ok || !errors.Is(err, ledger.ErrInvalidStanding) {
				t.Errorf("%s: RevokeStanding = %v, %v; want ledger.ErrInvalidStanding", name, ok, err)
			}
		}
		if ok, err := s.RevokeStanding(ctx, id, ledger.Revocation{Reason: ledger.EndPolicyChanged, By: "mcpsafe"}); !ok || err != nil {
			t.Fatalf("control: policy-changed revocation = %v, %v", ok, err)
		}
		if e, ok, err := s.ClaimStandingEnd(ctx, id); !ok || err != nil || e.Reason != ledger.EndPolicyChanged {
			t.Fatalf("claim = %+v, %v, %v; want policy-changed", e, ok, err)
		}
	})

	t.Run("claims raced over two stores", func(t *testing.T) {
		open := newBackend(t)
		stores := []ledger.StandingStore{standingOf(t, open(t)), standingOf(t, open(t))}
		const grants, claimers = 10, 16
		ids := make([]string, grants)
		for i := range ids {
			ids[i] = put(t, stores[0], NewNonce(), 3, hour())
			if ok, err := stores[1].RevokeStanding(ctx, ids[i], ledger.Revocation{By: "racer"}); !ok || err != nil {
				t.Fatalf("revoke: %v, %v", ok, err)
			}
		}
		wins := make([]atomic.Int64, grants)
		var errs atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for c := 0; c < claimers; c++ {
			wg.Add(1)
			go func(s ledger.StandingStore) {
				defer wg.Done()
				<-start
				for i, id := range ids {
					_, ok, err := s.ClaimStandingEnd(ctx, id)
					if err != nil {
						errs.Add(1)
					}
					if ok {
						wins[i].Add(1)
					}
				}
			}(stores[c%2])
		}
		close(start)
		wg.Wait()
		for i := range wins {
			if wins[i].Load() != 1 || errs.Load() != 0 {
				t.Fatalf("grant %d claimed %d times (errors %d); want exactly once", i, wins[i].Load(), errs.Load())
			}
		}
	})

	t.Run("closed store refuses", func(t *testing.T) {
		st := newBackend(t)(t)
		s := standingOf(t, st)
		id := put(t, s, NewNonce(), 1, hour())
		st.Close()
		if _, ok, err := s.UseStanding(ctx, id); ok || !errors.Is(err, ledger.ErrUnavailable) {
			t.Fatalf("use after Close = %v, %v; want false, ledger.ErrUnavailable", ok, err)
		}
	})
}
