package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/channel"
)

// storeKinds opens two handles on one store of each kind: for memory and
// SQLite the same store twice (one process), for PostgreSQL two stores
// on one database, as two replicas have. The conformance suite runs on
// each: what one handle does the other sees, and the exactly-once rules
// hold across the two.
var storeKinds = []struct {
	name string
	open func(t *testing.T) (store, store)
}{
	{"memory", func(t *testing.T) (store, store) {
		s, err := openStore("memory")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.close() })
		return s, s
	}},
	{"sqlite", func(t *testing.T) (store, store) {
		s, err := openStore("file:" + filepath.Join(t.TempDir(), "a.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.close() })
		return s, s
	}},
	{"postgres", func(t *testing.T) (store, store) {
		u := pgTestDB(t)
		a, err := openStore(u)
		if err != nil {
			t.Fatal(err)
		}
		b, err := openStore(u)
		if err != nil {
			a.close()
			t.Fatal(err)
		}
		t.Cleanup(func() { a.close(); b.close() })
		return a, b
	}},
}

func TestStoreConformance(t *testing.T) {
	for _, k := range storeKinds {
		t.Run(k.name, func(t *testing.T) { storeConformance(t, k.open) })
	}
}

func confRecord(id string, now time.Time, deadline time.Duration) *record {
	return &record{
		Req: channel.WireRequest{Version: 1, ID: id, Tool: "delete_file", Principal: "user:carol",
			Arguments: json.RawMessage(`{"z": 1,  "a": "x", "z2": [1,2]}`), ExpiresAt: now.Add(time.Hour)},
		BodyDigest: "d-" + id, Received: now, Deadline: now.Add(deadline), Required: 2, Status: channel.StatusPending,
	}
}

func mustAdmit(t *testing.T, s store, id string, deadline time.Duration) record {
	t.Helper()
	r, err := s.admit(context.Background(), id, func(now time.Time, _ int) (*record, error) {
		return confRecord(id, now, deadline), nil
	}, func(record, time.Time) (*record, error) { return nil, fail(409, "exists") })
	if err != nil {
		t.Fatalf("admit %s: %v", id, err)
	}
	return r
}

// approveStep is the heart of decideVote: a vote counts once per approver,
// and the Required-th distinct vote decides.
func approveStep(by string) func(record, time.Time) (*record, error) {
	return func(cur record, now time.Time) (*record, error) {
		if cur.Status != channel.StatusPending {
			return nil, fail(409, "already %s", cur.Status)
		}
		for _, v := range cur.Approvals {
			if v.By == by {
				return nil, fail(409, "%s already approved", by)
			}
		}
		next := cur
		next.Approvals = append(append([]vote(nil), cur.Approvals...), vote{By: by, At: now})
		if len(next.Approvals) >= next.Required {
			next.Status, next.DecidedAt = channel.StatusApproved, now
		}
		return &next, nil
	}
}

func storeConformance(t *testing.T, open func(t *testing.T) (store, store)) {
	ctx := context.Background()

	t.Run("RoundTripKeepsArgumentsBytes", func(t *testing.T) {
		a, b := open(t)
		mustAdmit(t, a, "rt", time.Hour)
		got, err := b.get(ctx, "rt")
		if err != nil {
			t.Fatal(err)
		}
		// Key order is what the approver saw sent (a jsonb column would
		// sort it); insignificant white space may go.
		if a := string(got.Req.Arguments); a != `{"z": 1,  "a": "x", "z2": [1,2]}` && a != `{"z":1,"a":"x","z2":[1,2]}` {
			t.Fatalf("arguments changed in the store: %s", a)
		}
		if _, err := b.get(ctx, "nope"); !errors.Is(err, errNotFound) {
			t.Fatalf("get of a missing id: %v", err)
		}
		if _, err := b.update(ctx, "nope", approveStep("x")); !errors.Is(err, errNotFound) {
			t.Fatalf("update of a missing id: %v", err)
		}
	})

	t.Run("AdmitOnceAcrossHandles", func(t *testing.T) {
		a, b := open(t)
		var created, again atomic.Int32
		var wg sync.WaitGroup
		for i := range 8 {
			s := a
			if i%2 == 1 {
				s = b
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := s.admit(ctx, "same", func(now time.Time, _ int) (*record, error) {
					created.Add(1)
					return confRecord("same", now, time.Hour), nil
				}, func(record, time.Time) (*record, error) { again.Add(1); return nil, nil })
				if err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		// A create that lost an insert race runs again and finds the
		// row: at least one create, exactly 8 callers served, one row.
		if again.Load() != 7 {
			t.Fatalf("%d callers found the request (created %d); want 7 re-attaches", again.Load(), created.Load())
		}
		if _, n, _ := b.pending(ctx, 0, 0); n != 1 {
			t.Fatalf("%d pending, want 1", n)
		}
	})

	t.Run("DistinctApproversDecideOnce", func(t *testing.T) {
		a, b := open(t)
		mustAdmit(t, a, "nofm", time.Hour)
		people := []string{"alice", "bob", "dave", "erin", "alice", "bob"}
		var ok atomic.Int32
		var decidedBy atomic.Int32
		var wg sync.WaitGroup
		for i, p := range people {
			s := a
			if i%2 == 1 {
				s = b
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := s.update(ctx, "nofm", approveStep(p))
				if err == nil {
					ok.Add(1)
					if r.Status == channel.StatusApproved && len(r.Approvals) == 2 {
						decidedBy.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		got, _ := b.get(ctx, "nofm")
		if ok.Load() != 2 || decidedBy.Load() != 1 || got.Status != channel.StatusApproved || len(got.Approvals) != 2 || got.Approvals[0].By == got.Approvals[1].By {
			t.Fatalf("%d votes counted, %d decided; record %s with %v", ok.Load(), decidedBy.Load(), got.Status, voters(&got))
		}
	})

	t.Run("NoLostUpdates", func(t *testing.T) {
		a, b := open(t)
		r := mustAdmit(t, a, "many", time.Hour)
		_ = r
		var wg sync.WaitGroup
		for i := range 10 {
			s := a
			if i%2 == 1 {
				s = b
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := s.update(ctx, "many", func(cur record, _ time.Time) (*record, error) {
					next := cur
					next.Required++
					return &next, nil
				})
				if err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if got, _ := a.get(ctx, "many"); got.Required != 12 {
			t.Fatalf("required = %d after 10 increments from 2: an update was lost", got.Required)
		}
	})

	t.Run("ReplayRefusedOnEveryHandle", func(t *testing.T) {
		a, b := open(t)
		var fresh atomic.Int32
		var wg sync.WaitGroup
		for i := range 8 {
			s := a
			if i%2 == 1 {
				s = b
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				f, err := s.sawSignature(ctx, "t=1.sig", time.Now().Add(time.Minute))
				if err != nil {
					t.Error(err)
				}
				if f {
					fresh.Add(1)
				}
			}()
		}
		wg.Wait()
		if fresh.Load() != 1 {
			t.Fatalf("%d handles took the same signature as fresh, want 1", fresh.Load())
		}
		if f, _ := b.sawSignature(ctx, "t=1.other", time.Now().Add(time.Minute)); !f {
			t.Fatal("control: another signature was refused")
		}
		// A signature past its window counts as absent (the sender's
		// timestamp check refuses it before it gets here).
		if f, _ := a.sawSignature(ctx, "t=0.old", time.Now().Add(-time.Second)); !f {
			t.Fatal("first sight of an old signature")
		}
		if f, _ := b.sawSignature(ctx, "t=0.old", time.Now().Add(time.Minute)); !f {
			t.Fatal("a signature whose window ended stays refused forever")
		}
	})

	t.Run("ExpireOnceByStoreClock", func(t *testing.T) {
		a, b := open(t)
		mustAdmit(t, a, "late", -time.Second)
		mustAdmit(t, a, "early", time.Hour)
		var n atomic.Int32
		var wg sync.WaitGroup
		for i := range 6 {
			s := a
			if i%2 == 1 {
				s = b
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, err := s.expire(ctx)
				if err != nil {
					t.Error(err)
				}
				for _, r := range got {
					if r.Req.ID != "late" || r.Status != channel.StatusExpired {
						t.Errorf("expired %s (%s)", r.Req.ID, r.Status)
					}
					n.Add(1)
				}
			}()
		}
		wg.Wait()
		if n.Load() != 1 {
			t.Fatalf("the overdue request expired %d times", n.Load())
		}
		if r, _ := b.get(ctx, "early"); r.Status != channel.StatusPending {
			t.Fatal("control: a request within its deadline expired")
		}
		if _, err := b.update(ctx, "late", approveStep("alice")); err == nil {
			t.Fatal("a vote on an expired request was taken")
		}
	})

	t.Run("PendingPagesAndHistory", func(t *testing.T) {
		a, b := open(t)
		for i := range 7 {
			mustAdmit(t, a, fmt.Sprintf("p%d", i), time.Hour)
		}
		for _, id := range []string{"p1", "p4"} {
			if _, err := a.update(ctx, id, func(cur record, now time.Time) (*record, error) {
				next := cur
				next.Status, next.DecidedAt = channel.StatusDenied, now
				return &next, nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		page, total, err := b.pending(ctx, 2, 2)
		if err != nil || total != 5 || len(page) != 2 || page[0].Req.ID != "p3" || page[1].Req.ID != "p5" {
			t.Fatalf("page 2 of 2: %v %d %v", ids(page), total, err)
		}
		all, _, _ := b.pending(ctx, 0, -1)
		if len(all) != 5 || all[0].Req.ID != "p0" {
			t.Fatalf("all pending: %v", ids(all))
		}
		h, err := b.history(ctx, 10)
		if err != nil || len(h) != 2 || h[0].Req.ID != "p4" {
			t.Fatalf("history newest first: %v %v", ids(h), err)
		}
		if n, _ := b.countPending(ctx); n != 5 {
			t.Fatalf("count %d", n)
		}
		if everything, _ := b.all(ctx); len(everything) != 7 {
			t.Fatalf("all: %d", len(everything))
		}
	})

	t.Run("PruneKeepsPendingAndHeld", func(t *testing.T) {
		a, b := open(t)
		for _, id := range []string{"old", "held", "recent", "open"} {
			mustAdmit(t, a, id, time.Hour)
		}
		for _, id := range []string{"old", "held", "recent"} {
			a.update(ctx, id, func(cur record, now time.Time) (*record, error) {
				next := cur
				// Decided an hour ago, past the minute's retention; but
				// the one decided now is within it.
				next.Status, next.DecidedAt = channel.StatusDenied, now.Add(-time.Hour)
				if id == "recent" {
					next.DecidedAt = now
				}
				if id == "held" {
					next.PollBy, next.PollUntil = "tok", now.Add(time.Hour)
				}
				return &next, nil
			})
		}
		if err := b.prune(ctx, time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := a.get(ctx, "old"); !errors.Is(err, errNotFound) {
			t.Fatal("a decided request past the retention was kept")
		}
		for _, id := range []string{"held", "recent", "open"} {
			if _, err := a.get(ctx, id); err != nil {
				t.Fatalf("%s pruned: %v", id, err)
			}
		}
	})

	t.Run("CeremonyTakenOnce", func(t *testing.T) {
		a, b := open(t)
		if err := a.flows().putFlow(ctx, flowOIDC, "state-1", []byte("v1"), time.Now().Add(time.Minute), 0); err != nil {
			t.Fatal(err)
		}
		var got atomic.Int32
		var wg sync.WaitGroup
		for i := range 6 {
			s := a
			if i%2 == 1 {
				s = b
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, ok, err := s.flows().takeFlow(ctx, flowOIDC, "state-1")
				if err != nil {
					t.Error(err)
				}
				if ok && string(v) == "v1" {
					got.Add(1)
				}
			}()
		}
		wg.Wait()
		if got.Load() != 1 {
			t.Fatalf("a ceremony in progress was finished %d times", got.Load())
		}
		if _, ok, _ := b.flows().takeFlow(ctx, flowPasskeyRegister, "state-1"); ok {
			t.Fatal("a ceremony of another kind was found under the same key")
		}
		a.flows().putFlow(ctx, flowOIDC, "old", []byte("x"), time.Now().Add(-time.Second), 0)
		if _, ok, _ := b.flows().takeFlow(ctx, flowOIDC, "old"); ok {
			t.Fatal("an expired ceremony was finished")
		}
		for i := range 3 {
			if err := a.flows().putFlow(ctx, flowPasskeyApprove, fmt.Sprint(i), []byte("x"), time.Now().Add(time.Minute), 3); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.flows().putFlow(ctx, flowPasskeyApprove, "3", []byte("x"), time.Now().Add(time.Minute), 3); err == nil {
			t.Fatal("the cap on ceremonies in progress was not kept")
		}
	})

	t.Run("SessionsShared", func(t *testing.T) {
		a, b := open(t)
		s := session{name: "alice", csrf: "c", expires: time.Now().Add(time.Hour)}
		if err := a.sessions().putSession(ctx, "k1", s); err != nil {
			t.Fatal(err)
		}
		got, ok, err := b.sessions().getSession(ctx, "k1")
		if err != nil || !ok || got.name != "alice" || got.csrf != "c" {
			t.Fatalf("session on the other handle: %+v %v %v", got, ok, err)
		}
		if _, ok, _ := b.sessions().getSession(ctx, "k2"); ok {
			t.Fatal("an unknown session was found")
		}
		if err := b.sessions().endSession(ctx, "k1"); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := a.sessions().getSession(ctx, "k1"); ok {
			t.Fatal("a session ended on one handle lives on the other")
		}
	})
}

func ids(rs []record) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Req.ID)
	}
	return out
}
