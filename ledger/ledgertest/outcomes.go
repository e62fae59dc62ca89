package ledgertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/ledger"
)

// outcomesOf is the store's outcomes, through Store.Outcomes (what the gate
// calls); every store of this module keeps them.
func outcomesOf(t *testing.T, s ledger.Store) ledger.OutcomeStore {
	t.Helper()
	o := s.Outcomes()
	if o == nil {
		t.Fatalf("%T keeps no outcomes (Outcomes returned nil)", s)
	}
	return o
}

// outcomeConformance: an outcome is kept once (the first put wins, across
// stores on one backend), read back byte for byte until it expires
// (exclusive), and refused when too large or already expired.
func outcomeConformance(t *testing.T, newBackend Backend) {
	ctx := context.Background()
	hour := func() time.Time { return time.Now().Add(time.Hour) }
	t.Run("put then read on another store of the backend", func(t *testing.T) {
		open := newBackend(t)
		a, b := outcomesOf(t, open(t)), outcomesOf(t, open(t))
		data := []byte(`{"result":{"content":[{"type":"text","text":"Deleted \"a.txt\"."}]}}` + "\x00\xff")
		if err := a.PutOutcome(ctx, "card-1", data, hour()); err != nil {
			t.Fatal(err)
		}
		got, ok, err := b.Outcome(ctx, "card-1")
		if err != nil || !ok || !bytes.Equal(got, data) {
			t.Fatalf("Outcome = %q, %v, %v; want the bytes put", got, ok, err)
		}
		// Read twice: reading does not consume it.
		if _, ok, err := a.Outcome(ctx, "card-1"); err != nil || !ok {
			t.Fatalf("second read: %v %v", ok, err)
		}
		if _, ok, err := b.Outcome(ctx, "card-2"); err != nil || ok {
			t.Fatalf("unknown id: ok=%v err=%v", ok, err)
		}
	})
	t.Run("the first put wins", func(t *testing.T) {
		open := newBackend(t)
		stores := []ledger.OutcomeStore{outcomesOf(t, open(t)), outcomesOf(t, open(t))}
		var wins atomic.Int64
		var wg sync.WaitGroup
		for i := range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := stores[i%2].PutOutcome(ctx, "raced", []byte(fmt.Sprint(i)), hour())
				switch {
				case err == nil:
					wins.Add(1)
				case !errors.Is(err, ledger.ErrExists):
					t.Errorf("put %d: %v", i, err)
				}
			}()
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("%d puts of one id succeeded, want exactly 1", wins.Load())
		}
	})
	t.Run("expiry is exclusive", func(t *testing.T) {
		s := outcomesOf(t, newBackend(t)(t))
		if err := s.PutOutcome(ctx, "short", []byte("x"), time.Now().Add(300*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := s.Outcome(ctx, "short"); err != nil || !ok {
			t.Fatalf("before expiry: %v %v", ok, err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			_, ok, err := s.Outcome(ctx, "short")
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("an expired outcome is still read back")
			}
			time.Sleep(50 * time.Millisecond) // the backend's clock decides; polled, bounded
		}
		// Once expired, the id may hold a new outcome.
		if err := s.PutOutcome(ctx, "short", []byte("y"), hour()); err != nil {
			t.Fatalf("put after expiry: %v", err)
		}
	})
	t.Run("refused puts", func(t *testing.T) {
		s := outcomesOf(t, newBackend(t)(t))
		for name, err := range map[string]error{
			"too large":  s.PutOutcome(ctx, "big", bytes.Repeat([]byte("a"), ledger.MaxOutcomeData+1), hour()),
			"expired":    s.PutOutcome(ctx, "past", []byte("x"), time.Now().Add(-time.Second)),
			"invalid id": s.PutOutcome(ctx, "a b", []byte("x"), hour()),
			"empty id":   s.PutOutcome(ctx, "", []byte("x"), hour()),
			"long id":    s.PutOutcome(ctx, strings.Repeat("a", ledger.MaxNonceLen+1), []byte("x"), hour()),
		} {
			if err == nil {
				t.Errorf("%s: accepted", name)
			}
		}
		if _, ok, _ := s.Outcome(ctx, "big"); ok {
			t.Fatal("a refused put was kept")
		}
		// Control: the largest allowed outcome is kept whole.
		max := bytes.Repeat([]byte("b"), ledger.MaxOutcomeData)
		if err := s.PutOutcome(ctx, "max", max, hour()); err != nil {
			t.Fatal(err)
		}
		if got, ok, err := s.Outcome(ctx, "max"); err != nil || !ok || !bytes.Equal(got, max) {
			t.Fatalf("largest outcome: %d bytes, %v, %v", len(got), ok, err)
		}
	})
	t.Run("closed store refuses", func(t *testing.T) {
		st := newBackend(t)(t)
		s := outcomesOf(t, st)
		st.Close()
		if err := s.PutOutcome(ctx, "c", []byte("x"), hour()); !errors.Is(err, ledger.ErrUnavailable) {
			t.Fatalf("put on a closed store: %v", err)
		}
		if _, _, err := s.Outcome(ctx, "c"); !errors.Is(err, ledger.ErrUnavailable) {
			t.Fatalf("read on a closed store: %v", err)
		}
	})
}
