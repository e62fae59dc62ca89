package journal_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpsafe/mcpsafe/journal"
)

// These tests run in a synctest bubble: the sender's backoff and Close's
// bound are read off the bubble's clock, exactly, while the HTTP to the
// witness is real (loopback, one connection per request). time.Sleep in
// a bubble advances that clock; it does not wait.

// attempts is how many POSTs the witness got.
func (f *witnessFixture) attempts() int { return len(f.received()) }

// A witness that is down refuses nothing and delays nothing: every record
// is written at once, the failure shows in WitnessHealth (the journal's
// own Health stays clean), the sender retries after 200ms, then 400ms,
// then 800ms, logging the failure once, and once the witness is back the
// queued checkpoint reaches it and the health clears.
func TestWitnessDownRetriedWithBackoffThenDelivered(t *testing.T) {
	k := newCKKey(t, "audit.example")
	f := newWitnessFixture(t, k.verifier)
	f.status.Store(http.StatusServiceUnavailable)
	var log bytes.Buffer
	path := filepath.Join(t.TempDir(), "j.jsonl")
	synctest.Test(t, func(t *testing.T) {
		j, err := journal.Open(path, journal.WithCheckpoints(f.checkpoints(k, &log)))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		appendAll(t, j, calls()[:2]) // checkpoint seq 2
		if d := time.Since(start); d != 0 {
			t.Fatalf("records waited %v for the witness", d)
		}
		synctest.Wait()
		if n := f.attempts(); n != 1 {
			t.Fatalf("attempts at once: %d", n)
		}
		wantIn(t, "WitnessHealth", errString(j.WitnessHealth()), "503 Service Unavailable")
		if err := j.Health(); err != nil {
			t.Fatalf("the journal reports its own failure: %v", err)
		}
		for i, gap := range []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond} {
			time.Sleep(gap - time.Millisecond)
			synctest.Wait()
			if n := f.attempts(); n != i+1 {
				t.Fatalf("retry %d came early: %d attempts", i+1, n)
			}
			time.Sleep(time.Millisecond)
			synctest.Wait()
			if n := f.attempts(); n != i+2 {
				t.Fatalf("retry %d not %v after the one before: %d attempts", i+1, gap, n)
			}
		}
		f.status.Store(0) // back
		time.Sleep(1600 * time.Millisecond)
		synctest.Wait()
		if err := j.WitnessHealth(); err != nil {
			t.Fatalf("health after the witness came back: %v", err)
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
	})
	got := f.received()
	for i, p := range got {
		if p.seq != 2 || p.auth != "Bearer "+witnessToken {
			t.Fatalf("POST %d: %+v", i, p)
		}
	}
	if len(got) != 5 || got[4].status != http.StatusCreated {
		t.Fatalf("POSTs: %+v", got)
	}
	if hs := f.w.List(); len(hs) != 1 || hs[0].LatestSeq != 2 || hs[0].Checkpoints != 1 {
		t.Fatalf("the witness holds %+v", hs)
	}
	if n := strings.Count(log.String(), "cannot deliver checkpoints to the witness"); n != 1 {
		t.Fatalf("the same failure logged %d times:\n%s", n, log.String())
	}
	wantIn(t, "log", log.String(), "witness reachable again")
}

// How the sender takes each answer: a status that says the witness will
// never take this checkpoint (a fork, a rollback, another key, a bad
// signature, too large) is not retried, shows in WitnessHealth as a
// refusal and makes Close fail; any other failure (401 while a token is
// being fixed, 5xx) is retried for as long as it lasts, the backoff
// doubling up to 30s: 27 attempts in ten minutes.
func TestWitnessAnswersRetriedOrNot(t *testing.T) {
	for _, tc := range []struct {
		status    int
		permanent bool
	}{
		{http.StatusBadRequest, true},
		{http.StatusForbidden, true},
		{http.StatusConflict, true},
		{http.StatusRequestEntityTooLarge, true},
		{http.StatusUnauthorized, false},
		{http.StatusInternalServerError, false},
		{http.StatusBadGateway, false},
		{http.StatusTooManyRequests, false},
	} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			k := newCKKey(t, "audit.example")
			f := newWitnessFixture(t, k.verifier)
			f.status.Store(int32(tc.status))
			c := f.checkpoints(k, nil)
			c.WitnessCloseWait = time.Second
			path := filepath.Join(t.TempDir(), "j.jsonl")
			synctest.Test(t, func(t *testing.T) {
				j, err := journal.Open(path, journal.WithCheckpoints(c))
				if err != nil {
					t.Fatal(err)
				}
				appendAll(t, j, calls()[:2])
				time.Sleep(10 * time.Minute)
				synctest.Wait()
				health := errString(j.WitnessHealth())
				wantIn(t, "WitnessHealth", health, fmt.Sprint(tc.status))
				start := time.Now()
				err = j.Close()
				took := time.Since(start)
				if tc.permanent {
					if n := f.attempts(); n != 1 {
						t.Fatalf("a refused checkpoint was sent %d times", n)
					}
					wantIn(t, "WitnessHealth", health, "refused checkpoint seq 2")
					wantIn(t, "Close", errString(err), "refused checkpoint seq 2")
					if took != 0 {
						t.Fatalf("Close waited %v with nothing left to deliver", took)
					}
					return
				}
				if n := f.attempts(); n != 27+3 {
					// 27 in ten minutes; Close: at once, +200ms, +600ms.
					t.Fatalf("attempts: %d, want 30", n)
				}
				if strings.Contains(health, "refused") {
					t.Fatalf("a passing failure reported as a refusal: %s", health)
				}
				wantIn(t, "Close", errString(err), "1 checkpoint(s), the last for seq 2, not delivered", "within 1s", fmt.Sprint(tc.status))
				if took != time.Second {
					t.Fatalf("Close took %v, its bound is 1s", took)
				}
			})
			if _, rep, err := journal.VerifySigned(path, k.verifier); err != nil || rep.Latest.Seq != 2 {
				t.Fatalf("the journal and its own checkpoints: %+v %v", rep, err)
			}
		})
	}
}

// A refusal sticks: a later checkpoint the witness takes clears
// WitnessHealth, but Close still says that one was refused; the
// journal's history has a checkpoint the witness contradicts.
func TestRefusedCheckpointStillReportedAtClose(t *testing.T) {
	k := newCKKey(t, "audit.example")
	f := newWitnessFixture(t, k.verifier)
	path := filepath.Join(t.TempDir(), "j.jsonl")
	synctest.Test(t, func(t *testing.T) {
		j, err := journal.Open(path, journal.WithCheckpoints(f.checkpoints(k, nil)))
		if err != nil {
			t.Fatal(err)
		}
		f.status.Store(http.StatusConflict)
		appendAll(t, j, calls()[:2])
		synctest.Wait()
		wantIn(t, "WitnessHealth", errString(j.WitnessHealth()), "refused checkpoint seq 2", "409")
		f.status.Store(0)
		appendAll(t, j, calls()[2:4])
		synctest.Wait()
		if err := j.WitnessHealth(); err != nil {
			t.Fatalf("after a delivered checkpoint: %v", err)
		}
		wantIn(t, "Close", errString(j.Close()), "refused checkpoint seq 2")
	})
	if got := f.received(); len(got) != 2 || got[0].seq != 2 || got[1].seq != 4 || got[1].status != http.StatusCreated {
		t.Fatalf("POSTs: %+v", got)
	}
}

// Close gives a witness that stays down exactly WitnessCloseWait, then
// says how many checkpoints did not get there and the last seq; the
// journal and its local checkpoints are whole. Control: a witness that is
// up costs Close nothing and ends up with the final checkpoint.
func TestCloseBoundsTheWaitForADownWitness(t *testing.T) {
	for _, down := range []bool{true, false} {
		t.Run(fmt.Sprintf("down=%v", down), func(t *testing.T) {
			k := newCKKey(t, "audit.example")
			f := newWitnessFixture(t, k.verifier)
			if down {
				f.status.Store(http.StatusServiceUnavailable)
			}
			c := f.checkpoints(k, nil)
			// Not a multiple of the backoff: the bound runs out between
			// tries, not during one.
			c.WitnessCloseWait = 2500 * time.Millisecond
			path := filepath.Join(t.TempDir(), "j.jsonl")
			synctest.Test(t, func(t *testing.T) {
				j, err := journal.Open(path, journal.WithCheckpoints(c))
				if err != nil {
					t.Fatal(err)
				}
				appendAll(t, j, calls()) // checkpoints 2, 4, 6
				start := time.Now()
				err = j.Close()
				took := time.Since(start)
				if !down {
					if err != nil || took != 0 {
						t.Fatalf("Close with the witness up: %v after %v", err, took)
					}
					return
				}
				wantIn(t, "Close", errString(err), "3 checkpoint(s), the last for seq 6, not delivered", "within 2.5s", "503")
				if took != 2500*time.Millisecond {
					t.Fatalf("Close took %v, its bound is 2.5s", took)
				}
			})
			if _, rep, err := journal.VerifySigned(path, k.verifier); err != nil || rep.Latest.Seq != 6 {
				t.Fatalf("the journal and its own checkpoints: %+v %v", rep, err)
			}
			if hs := f.w.List(); !down && (len(hs) != 1 || hs[0].LatestSeq != 6) {
				t.Fatalf("the witness holds %+v", hs)
			}
		})
	}
}

// A witness back while the sender sleeps 30s between tries is tried at
// once when the journal closes, not after the sleep (which would outlast
// Close's default 5s bound and lose the checkpoints).
func TestCloseTriesAtOnceAWitnessThatCameBack(t *testing.T) {
	k := newCKKey(t, "audit.example")
	f := newWitnessFixture(t, k.verifier)
	f.status.Store(http.StatusServiceUnavailable)
	c := f.checkpoints(k, nil)
	c.WitnessCloseWait = 0 // the default
	path := filepath.Join(t.TempDir(), "j.jsonl")
	synctest.Test(t, func(t *testing.T) {
		j, err := journal.Open(path, journal.WithCheckpoints(c))
		if err != nil {
			t.Fatal(err)
		}
		appendAll(t, j, calls())
		time.Sleep(2 * time.Minute) // the backoff is at its 30s cap
		synctest.Wait()
		before := f.attempts()
		f.status.Store(0)
		start := time.Now()
		if err := j.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if took := time.Since(start); took != 0 {
			t.Fatalf("Close waited %v for the next scheduled try", took)
		}
		if n := f.attempts(); n != before+3 {
			t.Fatalf("Close sent %d POSTs, want the 3 queued checkpoints", n-before)
		}
	})
	if hs := f.w.List(); len(hs) != 1 || hs[0].LatestSeq != 6 || hs[0].Checkpoints != 3 {
		t.Fatalf("the witness holds %+v", hs)
	}
}

// While the witness is down the queue holds the 64 newest checkpoints:
// the oldest are dropped (each later checkpoint covers their records), the
// drop is logged, and once the witness is back it receives exactly the
// newest 64, oldest first.
func TestFullWitnessQueueDropsTheOldestCheckpoints(t *testing.T) {
	k := newCKKey(t, "audit.example")
	f := newWitnessFixture(t, k.verifier)
	f.status.Store(http.StatusServiceUnavailable)
	var log bytes.Buffer
	c := f.checkpoints(k, &log)
	c.Every = 1
	path := filepath.Join(t.TempDir(), "j.jsonl")
	synctest.Test(t, func(t *testing.T) {
		j, err := journal.Open(path, journal.WithCheckpoints(c))
		if err != nil {
			t.Fatal(err)
		}
		for range 35 {
			appendAll(t, j, calls()[:2]) // 70 records, 70 checkpoints
		}
		f.status.Store(0)
		time.Sleep(time.Minute)
		synctest.Wait()
		if err := j.WitnessHealth(); err != nil {
			t.Fatal(err)
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
	})
	var delivered []uint64
	for _, p := range f.received() {
		if p.status == http.StatusCreated {
			delivered = append(delivered, p.seq)
		}
	}
	if len(delivered) != 64 || delivered[0] != 7 || delivered[63] != 70 {
		t.Fatalf("delivered seqs %v, want 7..70", delivered)
	}
	for i := range delivered {
		if delivered[i] != uint64(7+i) {
			t.Fatalf("delivered out of order: %v", delivered)
		}
	}
	wantIn(t, "log", log.String(), "witness queue full; dropped the oldest checkpoint", "dropped=6")
	if strings.Contains(log.String(), "dropped=7") {
		t.Fatalf("more dropped than the queue overflowed:\n%s", log.String())
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// Close's bound running out while a delivery is in flight does not hide
// what the witness last answered: the report names its 503, not the
// cancelled request. (Real time, no bubble: the request must be in flight
// on a real socket when the bound ends.) Control: the witness's answer is
// what Close reports when nothing was in flight (TestCloseBoundsTheWaitForADownWitness).
func TestCloseReportsTheWitnessAnswerNotItsOwnCancel(t *testing.T) {
	k := newCKKey(t, "audit.example")
	var n atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			http.Error(rw, "witness answering 503", http.StatusServiceUnavailable)
			return
		}
		select { // a witness that hangs from then on
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	tok := filepath.Join(t.TempDir(), "witness.token")
	if err := os.WriteFile(tok, []byte(witnessToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := journal.Checkpoints{KeyFile: k.file, Every: 2, Interval: 1 << 62, WitnessURL: srv.URL, WitnessTokenFile: tok,
		WitnessCloseWait: time.Second, Logger: slog.New(slog.DiscardHandler)}
	j, err := journal.Open(filepath.Join(t.TempDir(), "j.jsonl"), journal.WithCheckpoints(c))
	if err != nil {
		t.Fatal(err)
	}
	appendAll(t, j, calls())
	err = j.Close()
	if n.Load() < 2 {
		t.Fatalf("%d deliveries, want the 503 and one in flight at the bound", n.Load())
	}
	wantIn(t, "Close", errString(err), "not delivered", "503")
	if strings.Contains(errString(err), "context canceled") {
		t.Fatalf("Close reports its own cancel: %v", err)
	}
}
