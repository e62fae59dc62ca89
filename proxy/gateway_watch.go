package proxy

import (
	"context"
	"crypto/sha256"
	"os"
	"time"
)

// WatchFile calls changed each time the content of the file at path
// differs from what it was at the previous look, looking every interval
// until ctx ends. It compares content, not times: an editor that rewrites
// the same bytes changes nothing, and a change within the same second is
// still seen. A file that cannot be read is skipped until it can.
func WatchFile(ctx context.Context, path string, every time.Duration, changed func()) {
	last, _ := fileDigest(path)
	watchFrom(ctx, path, every, last, changed)
}

func fileDigest(path string) ([32]byte, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return [32]byte{}, false
	}
	return sha256.Sum256(b), true
}

// watchFrom is WatchFile from a first look already taken (last).
func watchFrom(ctx context.Context, path string, every time.Duration, last [32]byte, changed func()) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		d, ok := fileDigest(path)
		if !ok || d == last {
			continue
		}
		last = d
		changed()
	}
}
