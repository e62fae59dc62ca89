package safefs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// raceTrials is how many Inspect+Remove attempts each race test makes
// while a goroutine swaps names. It is never reduced in -short mode: the
// issue requires this to run on CI.
const (
	raceTrials       = 3000
	parentRaceTrials = 1500
	maxSwapsPerTrial = 100
)

const outsideVictim = "OUTSIDE VICTIM: a file with the same name outside the root\n"

// swapper flips two names as fast as it can until stopped: atomically with
// exchange (renameat2 RENAME_EXCHANGE on Linux, renameatx_np RENAME_SWAP
// on macOS), or, where the file system lacks it, by a
// rename dance through a third name.
type swapper struct {
	a, b, spare string
	stop        chan struct{}
	wg          sync.WaitGroup
	swaps       atomic.Int64
}

func startSwapper(a, b, spare string) *swapper {
	s := &swapper{a: a, b: b, spare: spare, stop: make(chan struct{})}
	started := make(chan struct{})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		close(started)
		atomicSwap := true
		for {
			select {
			case <-s.stop:
				return
			default:
			}
			if s.swaps.Load() >= maxSwapsPerTrial {
				// Bounded so a loaded 2-core machine does not spend its
				// time here; unloaded, a trial's Inspect+Remove is over
				// well before this many swaps.
				<-s.stop
				return
			}
			if atomicSwap {
				err := exchange(s.a, s.b)
				if errors.Is(err, errNoExchange) {
					atomicSwap = false
					continue
				}
				if err == nil {
					s.swaps.Add(1)
				}
				continue
			}
			// a -> spare, b -> a, spare -> b. Directories cannot be
			// renamed over symlinks, hence the spare name.
			if os.Rename(s.a, s.spare) == nil && os.Rename(s.b, s.a) == nil && os.Rename(s.spare, s.b) == nil {
				s.swaps.Add(1)
			}
		}
	}()
	<-started
	return s
}

func (s *swapper) halt() int64 {
	close(s.stop)
	s.wg.Wait()
	return s.swaps.Load()
}

var spinSink atomic.Int64

// spin delays by a trial-dependent amount so Remove meets the swapper at
// every phase of its loop.
func spin(n int) {
	for i := 0; i < n*100; i++ {
		spinSink.Add(1)
	}
}

type raceCounts struct{ removed, refused, putBack, windowHits, inspectsOK, inspectsRefused int }

// TestRaceSwapTarget: the file name is swapped back and forth with a
// symlink to a file OUTSIDE the root, which has the same name and a
// known content, while Inspect and Remove run.
func TestRaceSwapTarget(t *testing.T) {
	tr := newTree(t)
	outFile := filepath.Join(tr.outside, "victim.txt")
	mustWrite(t, outFile, outsideVictim)
	d := tr.p("d")
	mustMkdir(t, d)
	victim, link, spare := filepath.Join(d, "victim.txt"), filepath.Join(d, "link"), filepath.Join(d, "spare")
	var c raceCounts
	var swaps int64
	for i := 0; i < raceTrials; i++ {
		content := fmt.Sprintf("trial %d\n", i)
		for _, p := range []string{victim, link, spare} {
			os.Remove(p)
		}
		mustWrite(t, victim, content)
		mustSymlink(t, outFile, link)
		info, err := tr.fs.Inspect(victim)
		if err != nil || info.SHA256 != sha(content) {
			t.Fatalf("trial %d: Inspect before the swapping: %+v %v", i, info, err)
		}
		s := startSwapper(victim, link, spare)
		spin(i % 40)
		// A fresh Inspect during the swapping must never read the outside file.
		if in, err := tr.fs.Inspect(victim); err == nil {
			c.inspectsOK++
			if in.SHA256 != sha(content) {
				t.Fatalf("trial %d: Inspect read %q, digest %s", i, in.Path, in.SHA256)
			}
		} else if errors.Is(err, ErrSymlink) || errors.Is(err, ErrChanged) || errors.Is(err, ErrNotFound) {
			c.inspectsRefused++
		} else {
			t.Fatalf("trial %d: Inspect: %v", i, err)
		}
		err = tr.fs.Remove(victim, info)
		swaps += s.halt()
		switch {
		case err == nil:
			c.removed++
			// Success means the approved file is gone, under every name.
			if p, ok := findContent(content, victim, link, spare); ok {
				t.Fatalf("trial %d: Remove returned nil but the approved file is still at %s", i, p)
			}
		case errors.Is(err, ErrRaceLost):
			// The documented window: the swapped-in symlink was unlinked
			// instead of the file, inside the root, and it was reported.
			c.windowHits++
			if _, ok := findContent(content, victim, link, spare); !ok {
				t.Fatalf("trial %d: ErrRaceLost but the approved file is gone", i)
			}
		case errors.Is(err, ErrChanged):
			c.refused++
			if strings.Contains(err.Error(), "put back") {
				c.putBack++
			}
		default:
			t.Fatalf("trial %d: Remove: %v (not ErrChanged)", i, err)
		}
		mustContent(t, outFile, outsideVictim)
		tr.checkOutside(t)
	}
	checkOutsideDir(t, tr, map[string]string{"secret.txt": secretContent, "victim.txt": outsideVictim})
	t.Logf("%d trials, %d swaps: removed %d, lost the documented race %d, refused %d (swapped in at the last instant and put back: %d); Inspect during swaps: %d ok, %d refused",
		raceTrials, swaps, c.removed, c.windowHits, c.refused, c.putBack, c.inspectsOK, c.inspectsRefused)
	if c.refused == 0 || swaps == 0 {
		t.Fatalf("the swapper never interfered (swaps %d, refusals %d): the race was not exercised", swaps, c.refused)
	}
}

// TestRaceSwapParent: the parent directory is swapped back and forth with
// a symlink to a directory OUTSIDE the root holding a file of the same
// name, while Inspect and Remove run.
func TestRaceSwapParent(t *testing.T) {
	tr := newTree(t)
	outFile := filepath.Join(tr.outside, "victim.txt")
	mustWrite(t, outFile, outsideVictim)
	d, dlink, spare := tr.p("d"), tr.p("dlink"), tr.p("spare")
	var c raceCounts
	var swaps int64
	for i := 0; i < parentRaceTrials; i++ {
		content := fmt.Sprintf("trial %d\n", i)
		// Put the real directory back under the name d.
		if fi, err := os.Lstat(d); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			os.Remove(d)
		}
		for _, p := range []string{dlink, spare} {
			if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
				if err := os.Rename(p, d); err != nil {
					t.Fatal(err)
				}
			}
			os.Remove(p)
		}
		mustMkdir(t, d)
		victim := filepath.Join(d, "victim.txt")
		mustWrite(t, victim, content)
		mustSymlink(t, tr.outside, dlink)
		info, err := tr.fs.Inspect(victim)
		if err != nil || info.SHA256 != sha(content) {
			t.Fatalf("trial %d: Inspect before the swapping: %+v %v", i, info, err)
		}
		s := startSwapper(d, dlink, spare)
		spin(i % 40)
		if in, err := tr.fs.Inspect(victim); err == nil {
			c.inspectsOK++
			if in.SHA256 != sha(content) {
				t.Fatalf("trial %d: Inspect read %q, digest %s", i, in.Path, in.SHA256)
			}
		} else if errors.Is(err, ErrSymlink) || errors.Is(err, ErrChanged) || errors.Is(err, ErrNotFound) {
			c.inspectsRefused++
		} else {
			t.Fatalf("trial %d: Inspect: %v", i, err)
		}
		err = tr.fs.Remove(victim, info)
		swaps += s.halt()
		switch {
		case err == nil:
			c.removed++
		case errors.Is(err, ErrChanged):
			c.refused++
		default:
			t.Fatalf("trial %d: Remove: %v (not ErrChanged)", i, err)
		}
		mustContent(t, outFile, outsideVictim)
		tr.checkOutside(t)
	}
	checkOutsideDir(t, tr, map[string]string{"secret.txt": secretContent, "victim.txt": outsideVictim})
	t.Logf("%d trials, %d swaps: removed %d, refused %d; Inspect during swaps: %d ok, %d refused",
		parentRaceTrials, swaps, c.removed, c.refused, c.inspectsOK, c.inspectsRefused)
	if c.refused == 0 || swaps == 0 {
		t.Fatalf("the swapper never interfered (swaps %d, refusals %d): the race was not exercised", swaps, c.refused)
	}
}

// findContent reports which of the names holds a regular file with content.
func findContent(content string, names ...string) (string, bool) {
	for _, p := range names {
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if b, err := os.ReadFile(p); err == nil && string(b) == content {
			return p, true
		}
	}
	return "", false
}

// checkOutsideDir asserts the outside directory holds exactly these files.
func checkOutsideDir(t *testing.T, tr *tree, want map[string]string) {
	t.Helper()
	ents, err := os.ReadDir(tr.outside)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != len(want) {
		t.Fatalf("outside directory now holds %v, want %d files", ents, len(want))
	}
	for name, content := range want {
		mustContent(t, filepath.Join(tr.outside, name), content)
	}
}
