package journal

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkAppend measures durable records/s with group commit against one
// write+fsync per record (WithMaxBatch(1)) at the same concurrency, in the
// same run, on the same disk.
func BenchmarkAppend(b *testing.B) {
	rec := Record{
		Call: "call-0123456789", Tool: "delete_file", Principal: "alice@example.com", Session: "sess-1",
		ArgsDigest: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Args:       json.RawMessage(`{"path":"/srv/data/report.txt","recursive":false}`),
		Summary:    "delete /srv/data/report.txt (12 KiB, modified 2026-01-02)",
		Decision:   ClientAccepted, By: "client",
	}
	for _, mode := range []struct {
		name  string
		batch int
	}{{"group", 1024}, {"fsync-each", 1}} {
		for _, writers := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("%s/c%d", mode.name, writers), func(b *testing.B) {
				j, err := Open(filepath.Join(b.TempDir(), "j.jsonl"), WithMaxBatch(mode.batch))
				if err != nil {
					b.Fatal(err)
				}
				defer j.Close()
				ctx := context.Background()
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				for range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for next.Add(1) <= int64(b.N) {
							if err := j.Append(ctx, rec); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
			})
		}
	}
}

// BenchmarkOpen opens and closes journals of 10,000 and 100,000 records
// whose calls all have their outcome, as a server's start and stop do,
// and reports the lines Open read: neither they nor the bytes allocated
// per open may grow with the journal. The journals are written by the
// real writer with its fsync replaced by nothing (a fixture, not a
// durability test), from many writers at once.
func BenchmarkOpen(b *testing.B) {
	for _, records := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("records=%d", records), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "j.jsonl")
			noSync := withFaults(nil, func(*os.File) error { return nil })
			pairsJournal(b, path, records/2, noSync)
			lines := 0
			count := func(o *options) { o.scanned = func(n int) { lines = n } }
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				j, err := Open(path, count)
				if err != nil {
					b.Fatal(err)
				}
				if err := j.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(lines), "lines-read")
		})
	}
}
