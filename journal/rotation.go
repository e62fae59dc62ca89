package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Rotation sets when the active file is sealed into a segment and a new
// one started (WithRotation). Zero fields are no limit.
type Rotation struct {
	// MaxBytes seals the active file once it holds at least this many
	// bytes (checked after each commit, so a file ends up to one batch
	// past it).
	MaxBytes int64
	// MaxAge seals the active file once its first record is this old
	// (checked after each commit and at least once a minute, by the
	// journal's clock).
	MaxAge time.Duration
}

// WithRotation makes the journal rotate: when the active file reaches
// r.MaxBytes or r.MaxAge it is renamed to SegmentPath(path, first, last),
// and writing goes on in a new file at path, continuing the chain (seq and
// prev carry across, see Segments). With WithCheckpoints the head is signed
// just before each rotation, so every sealed segment is covered whole and
// pruning it later leaves a start a checkpoint vouches for.
//
// The refusal cap (WithMaxBytes) applies to the active file: with rotation
// it is reset by every rotation, and the total size is bounded by pruning
// old segments, not by the journal.
func WithRotation(r Rotation) Option {
	return func(o *options) { o.rotation = r }
}

// rotation steps at which tests inject a failure or a crash.
const (
	stepSeal     = "seal"     // before renaming the active file
	stepCreate   = "create"   // after renaming it, before creating the new one
	stepRollback = "rollback" // before renaming a sealed file back after a failed create
	stepDone     = "done"     // after the new active file exists and is synced
)

func (j *Journal) step(name string) error {
	if j.opts.rotateStep == nil {
		return nil
	}
	return j.opts.rotateStep(name)
}

// maybeRotate rotates when the active file is due. It runs in the writer
// goroutine between commits, so no record is in flight.
func (j *Journal) maybeRotate() {
	r := j.opts.rotation
	if r == (Rotation{}) || j.segFirst == 0 || j.outage != nil || j.stuck != nil {
		return
	}
	due := r.MaxBytes > 0 && j.size >= r.MaxBytes
	if !due && r.MaxAge > 0 {
		due = j.opts.clock().Sub(j.since) >= r.MaxAge
	}
	if !due {
		return
	}
	j.setRotErr(j.rotate())
}

// rotate seals the active file and starts a new one. Every record in it is
// already durable (rotation runs after a commit), and the head file keeps
// naming the last of them: the head is a property of the set, not of a
// file. A crash at any step leaves a set that Open takes as it is: the old
// file at path (nothing happened), or the sealed segment and no file at
// path (Open creates it), or the segment and an empty file at path.
func (j *Journal) rotate() error {
	if err := j.syncDeferred(); err != nil {
		return err
	}
	// Signed first, so that the segment about to be sealed is covered up
	// to its last record. A failed checkpoint does not stop the rotation
	// (it is reported by Health and retried); a later one covers the
	// segment as the chain passes through it.
	j.checkpoint()
	seg := SegmentPath(j.path, j.segFirst, j.seq)
	if _, err := os.Lstat(seg); err == nil {
		return fmt.Errorf("journal: not rotating: %s already exists (it would be replaced)", seg)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("journal: not rotating: %w", err)
	}
	if err := j.step(stepSeal); err != nil {
		return fmt.Errorf("journal: not rotating: %w", err)
	}
	if err := os.Rename(j.path, seg); err != nil {
		return fmt.Errorf("journal: not rotating: sealing %s: %w", seg, err)
	}
	dir := filepath.Dir(j.path)
	derr := syncDir(dir)
	nf, err := j.createActive(derr)
	if err != nil {
		// Writing on into the old file would put records into a segment
		// whose name says it ended: put it back, or stop writing.
		rerr := j.step(stepRollback)
		if rerr == nil {
			rerr = os.Rename(seg, j.path)
		}
		if rerr == nil {
			rerr = syncDir(dir)
		}
		if rerr != nil {
			j.stuck = fmt.Errorf("journal: unusable: rotation sealed %s, could not create %s (%v) nor undo the seal (%v); restart to resume", seg, j.path, err, rerr)
			j.setBroken(j.stuck)
			return j.stuck
		}
		return fmt.Errorf("journal: not rotated (writing on in %s): %w", j.path, err)
	}
	// The lock that keeps other writers out is the head file's, held
	// throughout; the active file's is taken as well for tools that look
	// at it, and may fail only while another process is failing to open
	// the journal.
	unlock, lerr := lockFile(nf)
	if lerr != nil {
		unlock = func() error { return nil }
	}
	j.unlck()
	j.f.Close()
	j.f, j.unlck = nf, unlock
	j.size, j.segFirst, j.since, j.capNoted = 0, 0, time.Time{}, false
	_ = j.step(stepDone)
	return nil
}

// createActive creates the new, empty active file and makes its directory
// entry durable. derr is the failure of syncing the rename, if any.
func (j *Journal) createActive(derr error) (*os.File, error) {
	if derr != nil {
		return nil, fmt.Errorf("syncing the directory after sealing: %w", derr)
	}
	if err := j.step(stepCreate); err != nil {
		return nil, err
	}
	nf, err := os.OpenFile(j.path, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syncDir(filepath.Dir(j.path)); err != nil {
		nf.Close()
		os.Remove(j.path)
		return nil, err
	}
	return nf, nil
}

func (j *Journal) setRotErr(err error) {
	j.errMu.Lock()
	j.rotErr = err
	j.errMu.Unlock()
}

func (j *Journal) rotationFailure() error {
	j.errMu.Lock()
	defer j.errMu.Unlock()
	return j.rotErr
}
