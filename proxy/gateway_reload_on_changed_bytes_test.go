package proxy

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// A rewrite with the same bytes is no change; new bytes are, once each.
func TestWatchFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	writeFile(t, path, "one")
	var n atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	// The first look is taken here, before the writes below (a goroutine
	// that started late would otherwise take "two" as its first look).
	first, ok := fileDigest(path)
	if !ok {
		t.Fatal("cannot read the file")
	}
	go func() {
		watchFrom(ctx, path, 5*time.Millisecond, first, func() { n.Add(1) })
		close(done)
	}()
	writeFile(t, path, "one")
	writeFile(t, path, "two")
	eventually(t, "the change seen", func() bool { return n.Load() > 0 })
	writeFile(t, path, "three")
	eventually(t, "the second change seen", func() bool { return n.Load() > 1 })
	cancel()
	<-done
	if n.Load() != 2 {
		t.Fatalf("changed called %d times for two changes", n.Load())
	}
}
