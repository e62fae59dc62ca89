//go:build linux

package journal

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A checkpoint file on a full disk: the note that does not fit is cut
// back to where it began (a note glued onto a partial one would make the
// whole file unreadable to verify), the failure shows in CheckpointHealth
// and Health while records go on being written, and once there is room
// the next checkpoint is written whole and the health clears.
func TestCheckpointOnAFullDiskIsCutBackNotGlued(t *testing.T) {
	keyFile, v := ckKeys(t, "audit.example")
	disk := mountTmpfs(t, 64<<10)
	witness := filepath.Join(disk, "witness.checkpoints")
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := Open(path, WithCheckpoints(Checkpoints{KeyFile: keyFile, Every: 1, Interval: time.Hour, Witness: witness}))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ctx := context.Background()
	rec := sampleRecords()[0]
	// Checkpoint until the witness file's last page has room for part
	// of a note but not all of it: the next write is cut short.
	for i := 0; ; i++ {
		if err := j.Append(ctx, rec); err != nil {
			t.Fatal(err)
		}
		if room := 4096 - fileSize(t, witness)%4096; room > 0 && room < 150 {
			break
		}
		if i > 200 {
			t.Fatal("the witness file never ended near a page boundary")
		}
	}
	if err := j.CheckpointHealth(); err != nil {
		t.Fatal(err)
	}
	before := fileSize(t, witness)
	filler := filepath.Join(disk, "filler")
	fillDisk(t, filler)

	if err := j.Append(ctx, rec); err != nil {
		t.Fatalf("a record refused because its checkpoint did not fit: %v", err)
	}
	ckErr := j.CheckpointHealth()
	if ckErr == nil || !strings.Contains(ckErr.Error(), "writing checkpoint to "+witness) || !strings.Contains(ckErr.Error(), "no space left") {
		t.Fatalf("CheckpointHealth: %v", ckErr)
	}
	if err := j.Health(); err == nil || !strings.Contains(err.Error(), ckErr.Error()) {
		t.Fatalf("Health does not carry the checkpoint failure: %v", err)
	}
	if after := fileSize(t, witness); after != before {
		t.Fatalf("the witness file went from %d to %d bytes: the partial note stayed", before, after)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := j.Append(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := j.CheckpointHealth(); err != nil {
		t.Fatalf("after room was made: %v", err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	sum, rep, err := VerifySigned(path, v, witness)
	if err != nil || len(rep.TornFiles) != 0 || rep.Latest.Seq != sum.LastSeq {
		t.Fatalf("the witness file after the full disk: %+v %+v %v", sum, rep, err)
	}
}
