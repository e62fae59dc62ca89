package ledgertest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/ledger"
)

// RedeemFunc redeems one nonce: a store's Redeem, or the raw operation it
// is built on.
type RedeemFunc = func(context.Context, string) (bool, error)

// A BenchStore opens the store under benchmark, a fill function that makes
// every nonce redeemable (as a ledger grant, or as a raw row/key when raw),
// and the raw operation over the store's own client.
type BenchStore func(b *testing.B) (s ledger.Store, fill func(b *testing.B, nonces []string, raw bool), raw RedeemFunc)

// BenchRedeem measures the ledger's redeem path of one store at
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
// Each backend's BenchmarkRedeem runs it; scripts/bench-ledger prints the
// ratios. Sub-benchmarks are named NAME/c1 and NAME/c64.
func BenchRedeem(b *testing.B, name string, open BenchStore) {
	for _, conc := range []int{1, 64} {
		b.Run(fmt.Sprintf("%s/c%d", name, conc), func(b *testing.B) {
			s, fill, rawOp := open(b)
			defer s.Close()
			ledgerNonces, rawNonces := make([]string, b.N), make([]string, b.N)
			for i := range ledgerNonces {
				ledgerNonces[i], rawNonces[i] = NewNonce(), NewNonce()
			}
			fill(b, ledgerNonces, false)
			fill(b, rawNonces, true)
			interleave(b, conc, s.Redeem, ledgerNonces, rawOp, rawNonces)
		})
	}
}

// benchBlocks is how many blocks of each kind interleave() runs.
const benchBlocks = 8

func interleave(b *testing.B, conc int, ledgerOp RedeemFunc, ledgerNonces []string, rawOp RedeemFunc, rawNonces []string) {
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

// runConcurrent has conc goroutines take nonces in order until all are spent.
func runConcurrent(b *testing.B, conc int, nonces []string, op RedeemFunc) {
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
