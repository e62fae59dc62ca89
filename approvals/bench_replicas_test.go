package approvals

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/channel"
)

// benchReplica is one approval service with its HTTP server, for
// benchmarks (newEnv takes a *testing.T).
type benchReplica struct {
	svc  *Service
	srv  *httptest.Server
	hook *channel.Webhook
}

func benchReplicas(b *testing.B, store string, n int) []*benchReplica {
	b.Helper()
	var out []*benchReplica
	for range n {
		svc, err := NewService(ServiceOptions{Secret: testSecret, Approvers: testApprovers, Store: store, MaxPending: 1 << 20})
		if err != nil {
			b.Fatal(err)
		}
		srv := httptest.NewServer(svc)
		hook, err := channel.NewWebhook(srv.URL+"/webhook", testSecret)
		if err != nil {
			b.Fatal(err)
		}
		r := &benchReplica{svc: svc, srv: srv, hook: hook}
		b.Cleanup(func() { svc.Close(); srv.Close() })
		out = append(out, r)
	}
	return out
}

// wakeLatency asks on at, decides on by once the request is held, and
// returns how long after the decision the gate's long poll answered.
func wakeLatency(b *testing.B, at, by *benchReplica, id string) time.Duration {
	done := make(chan time.Time, 1)
	go func() {
		d, err := at.hook.Approve(context.Background(), testRequest(id))
		if err != nil || !d.Approved {
			b.Errorf("%s: %+v %v", id, d, err)
		}
		done <- time.Now()
	}()
	waitFor(b, "the caller's long poll in the store", func() bool {
		r, err := by.svc.st.get(context.Background(), id)
		return err == nil && r.PollBy != ""
	})
	start := time.Now()
	if _, herr := by.svc.decide(id, "alice", true, ""); herr != nil {
		b.Fatal(herr)
	}
	return (<-done).Sub(start)
}

func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

// BenchmarkDecisionWakesOtherReplica: a decision made on replica B ends
// the gate's long poll held by replica A (LISTEN/NOTIFY; the periodic
// re-read is off), against the same on one replica, in the same run. The
// time runs from the decision's call to the gate's answer, so it includes
// the decision's own transaction.
func BenchmarkDecisionWakesOtherReplica(b *testing.B) {
	rs := benchReplicas(b, pgTestDB(b), 2)
	for _, r := range rs {
		r.svc.pollEvery.Store(int64(time.Hour))
	}
	var cross, one []time.Duration
	for i := 0; b.Loop(); i++ {
		cross = append(cross, wakeLatency(b, rs[0], rs[1], fmt.Sprintf("x-%d", i)))
		one = append(one, wakeLatency(b, rs[0], rs[0], fmt.Sprintf("o-%d", i)))
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(pct(cross, 50)), "cross-p50-ms")
	b.ReportMetric(ms(pct(cross, 99)), "cross-p99-ms")
	b.ReportMetric(ms(pct(one, 50)), "one-p50-ms")
	b.ReportMetric(ms(pct(one, 99)), "one-p99-ms")
	b.ReportMetric(ms(pct(cross, 50))/ms(pct(one, 50)), "p50-ratio")
	b.ReportMetric(0, "ns/op")
}

// fillPending admits n pending requests through the stores of rs, spread
// over them, the way gates' webhook calls would (without holding them).
func fillPending(b *testing.B, rs []*benchReplica, n int) {
	b.Helper()
	var wg sync.WaitGroup
	per := (n + 7) / 8
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w * per; i < min(n, (w+1)*per); i++ {
				st := rs[i%len(rs)].svc.st
				id := fmt.Sprintf("fill-%05d", i)
				req := testRequest(id)
				wr := channel.WireRequest{Version: 1, ID: id, Tool: req.Tool, Summary: req.Summary, Details: req.Details,
					Targets: req.Targets, ArgsDigest: req.ArgsDigest, Principal: req.Principal, Audience: req.Audience,
					ExpiresAt: time.Now().Add(time.Hour).UTC()}
				_, err := st.admit(context.Background(), id, func(now time.Time, _ int) (*record, error) {
					return &record{Req: wr, BodyDigest: id, Received: now, Deadline: now.Add(time.Hour), Required: 1, Status: channel.StatusPending}, nil
				}, func(record, time.Time) (*record, error) { return nil, nil })
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func benchGet(b *testing.B, client *http.Client, url string, cookie *http.Cookie) {
	req, _ := http.NewRequest("GET", url, nil)
	if cookie != nil {
		req.AddCookie(cookie)
	} else {
		req.Header.Set("Authorization", "Bearer "+tokenOf("alice"))
	}
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	buf := make([]byte, 32<<10)
	for {
		k, err := resp.Body.Read(buf)
		n += int64(k)
		if err != nil {
			break
		}
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	b.SetBytes(n)
}

// BenchmarkPendingList10k: 10,000 pending requests across 3 replicas on
// one PostgreSQL database; the approver's page (its first window of
// PageSize) and the API's list (one page, and every pending request), each
// through a different replica.
func BenchmarkPendingList10k(b *testing.B) {
	rs := benchReplicas(b, pgTestDB(b), 3)
	fillPending(b, rs, 10_000)
	cookie, _, ok := rs[0].svc.auth.newSession("alice")
	if !ok {
		b.Fatal("no session")
	}
	client := &http.Client{}
	b.Run("page", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			benchGet(b, client, rs[i%3].srv.URL+"/", &http.Cookie{Name: sessionCookie, Value: cookie})
		}
	})
	b.Run("api-page", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			benchGet(b, client, rs[i%3].srv.URL+"/api/requests?page=1", nil)
		}
	})
	b.Run("api-all", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			benchGet(b, client, rs[i%3].srv.URL+"/api/requests", nil)
		}
	})
}

// BenchmarkMemoryPerPending: the heap a replica holds per pending request,
// with the PostgreSQL store (the state is in the database) and, for
// comparison, the memory store.
func BenchmarkMemoryPerPending(b *testing.B) {
	const n = 5_000
	for _, kind := range []string{"postgres", "memory"} {
		b.Run(kind, func(b *testing.B) {
			store := "memory"
			if kind == "postgres" {
				store = pgTestDB(b)
			}
			for b.Loop() {
				rs := benchReplicas(b, store, 1)
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				fillPending(b, rs, n)
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/n, "heap-B/pending")
				rs[0].svc.Close()
				if kind == "postgres" {
					pgExec(b, store, `TRUNCATE mcpsafe_approvals_requests CASCADE`)
				}
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}
