package ledger

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// BenchmarkRedeem measures the ledger's redeem path per store at
// concurrency 1 and 64 against the raw store operation it is built on, over
// the SAME client and connections, interleaved in the same run:
//
//	memory   map delete under a mutex
//	file     DELETE FROM grants WHERE nonce=? RETURNING nonce
//	redis    GETDEL
//	postgres DELETE FROM t WHERE nonce=$1 RETURNING nonce
//
// The machine is shared and fsync latency drifts by several times within
// seconds, so the two are run in alternating blocks (ABBA order) rather than
// as separate benchmarks: drift then hits both sides alike. ns/op covers the
// ledger blocks only; raw-ns/op the raw blocks; ratio is their quotient.
// Every operation must succeed (a redemption that returns false fails the
// benchmark), so a fast failure cannot pass for a fast redeem.
// scripts/bench-ledger prints the ratios.
func BenchmarkRedeem(b *testing.B) {
	for _, st := range benchStores {
		for _, conc := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s/c%d", st.name, conc), func(b *testing.B) {
				s, fill, rawOp := st.open(b)
				defer s.Close()
				ledgerNonces, rawNonces := make([]string, b.N), make([]string, b.N)
				for i := range ledgerNonces {
					ledgerNonces[i], rawNonces[i] = newNonce(), newNonce()
				}
				fill(b, ledgerNonces, false)
				fill(b, rawNonces, true)
				interleave(b, conc, s.Redeem, ledgerNonces, rawOp, rawNonces)
			})
		}
	}
}

// benchBlocks is how many blocks of each kind interleave() runs.
const benchBlocks = 8

func interleave(b *testing.B, conc int, ledgerOp redeemFunc, ledgerNonces []string, rawOp redeemFunc, rawNonces []string) {
	chunk := (len(ledgerNonces) + benchBlocks - 1) / benchBlocks
	var ledgerDur, rawDur time.Duration
	b.StopTimer()
	b.ResetTimer()
	for step := 0; step < 2*benchBlocks; step++ {
		ledger := step%4 == 0 || step%4 == 3 // A B B A
		op, list := rawOp, &rawNonces
		if ledger {
			op, list = ledgerOp, &ledgerNonces
		}
		n := min(chunk, len(*list))
		block := (*list)[:n]
		*list = (*list)[n:]
		if ledger {
			b.StartTimer()
		}
		start := time.Now()
		runConcurrent(b, conc, block, op)
		d := time.Since(start)
		if ledger {
			b.StopTimer()
			ledgerDur += d
		} else {
			rawDur += d
		}
	}
	rawPerOp := float64(rawDur.Nanoseconds()) / float64(b.N)
	ledgerPerOp := float64(ledgerDur.Nanoseconds()) / float64(b.N)
	b.ReportMetric(rawPerOp, "raw-ns/op")
	b.ReportMetric(ledgerPerOp/rawPerOp, "ratio")
	b.ReportMetric(1e9/ledgerPerOp, "redeems/s")
}

type redeemFunc = func(context.Context, string) (bool, error)

// runConcurrent has conc goroutines take nonces in order until all are spent.
func runConcurrent(b *testing.B, conc int, nonces []string, op redeemFunc) {
	ctx := context.Background()
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for g := 0; g < conc; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(len(nonces)) {
					return
				}
				ok, err := op(ctx, nonces[i])
				if err != nil || !ok {
					firstErr.CompareAndSwap(nil, fmt.Sprintf("redeem %d: ok=%v err=%v", i, ok, err))
					return
				}
			}
		}()
	}
	wg.Wait()
	if e := firstErr.Load(); e != nil {
		b.Fatal(e)
	}
}

type benchStore struct {
	name string
	// open returns the store, a fill function that makes every nonce
	// redeemable (as a ledger grant, or as a raw row/key when raw), and
	// the raw operation over the store's own client.
	open func(b *testing.B) (Store, func(b *testing.B, nonces []string, raw bool), func(context.Context, string) (bool, error))
}

var benchStores = []benchStore{
	{"memory", func(b *testing.B) (Store, func(*testing.B, []string, bool), func(context.Context, string) (bool, error)) {
		m := NewMemory(b.N + 1)
		var mu sync.Mutex
		rawMap := make(map[string]struct{}, b.N)
		fill := func(b *testing.B, nonces []string, raw bool) {
			exp := time.Now().Add(time.Hour)
			for _, n := range nonces {
				if raw {
					rawMap[n] = struct{}{}
				} else if err := m.Issue(context.Background(), n, exp); err != nil {
					b.Fatal(err)
				}
			}
		}
		rawOp := func(_ context.Context, n string) (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			_, ok := rawMap[n]
			delete(rawMap, n)
			return ok, nil
		}
		return m, fill, rawOp
	}},
	{"file", func(b *testing.B) (Store, func(*testing.B, []string, bool), func(context.Context, string) (bool, error)) {
		f, err := OpenFile(context.Background(), filepath.Join(b.TempDir(), "ledger.db"))
		if err != nil {
			b.Fatal(err)
		}
		fill := func(b *testing.B, nonces []string, _ bool) {
			// Raw rows share the table; the raw DELETE ignores expires_at.
			exp := time.Now().Add(time.Hour).UnixNano()
			tx, err := f.db.Begin()
			if err != nil {
				b.Fatal(err)
			}
			for _, n := range nonces {
				if _, err := tx.Exec(`INSERT INTO grants(nonce, expires_at) VALUES (?, ?)`, n, exp); err != nil {
					b.Fatal(err)
				}
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
		stmt, err := f.db.Prepare(`DELETE FROM grants WHERE nonce = ? RETURNING nonce`)
		if err != nil {
			b.Fatal(err)
		}
		rawOp := func(ctx context.Context, n string) (bool, error) {
			var got string
			err := stmt.QueryRowContext(ctx, n).Scan(&got)
			return err == nil, err
		}
		return f, fill, rawOp
	}},
	{"redis", func(b *testing.B) (Store, func(*testing.B, []string, bool), func(context.Context, string) (bool, error)) {
		u, _, prefix := redisBackend(b)
		s, err := Open(context.Background(), u)
		if err != nil {
			b.Fatal(err)
		}
		r := s.(*Redis)
		fill := func(b *testing.B, nonces []string, _ bool) {
			exp := time.Now().Add(time.Hour)
			v := redisMarker + strconv.FormatInt(exp.UnixNano(), 10)
			ctx := context.Background()
			for i := 0; i < len(nonces); i += 1000 {
				p := r.client.Pipeline()
				for _, n := range nonces[i:min(i+1000, len(nonces))] {
					p.Set(ctx, prefix+n, v, time.Hour)
				}
				if _, err := p.Exec(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}
		rawOp := func(ctx context.Context, n string) (bool, error) {
			_, err := r.client.GetDel(ctx, prefix+n).Result()
			return err == nil, err
		}
		return s, fill, rawOp
	}},
	{"postgres", func(b *testing.B) (Store, func(*testing.B, []string, bool), func(context.Context, string) (bool, error)) {
		u, _, table := postgresBackend(b)
		s, err := Open(context.Background(), u)
		if err != nil {
			b.Fatal(err)
		}
		p := s.(*Postgres)
		t := pgx.Identifier{table}.Sanitize()
		fill := func(b *testing.B, nonces []string, _ bool) {
			_, err := p.pool.Exec(context.Background(),
				`INSERT INTO `+t+` (nonce, expires_at) SELECT unnest($1::text[]), $2`, nonces, time.Now().Add(time.Hour))
			if err != nil {
				b.Fatal(err)
			}
		}
		q := `DELETE FROM ` + t + ` WHERE nonce = $1 RETURNING nonce`
		rawOp := func(ctx context.Context, n string) (bool, error) {
			var got string
			err := p.pool.QueryRow(ctx, q, n).Scan(&got)
			return err == nil, err
		}
		return s, fill, rawOp
	}},
}
