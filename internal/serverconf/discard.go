package serverconf

import (
	"errors"
	"io/fs"
	"os"

	"github.com/mcpsafe/mcpsafe/journal"
)

// Discard closes the stores of a server that failed to start (Close), and
// removes the journal Build created for it when it holds no record, with
// its head, server note and checkpoints: a start that never served leaves no empty
// journal behind. A journal that existed before, or has a record, stays.
func (g *Gate) Discard() error {
	err := g.Close()
	if !g.journalCreated || g.JournalPath == "" {
		return err
	}
	g.journalCreated = false
	st, serr := os.Lstat(g.JournalPath)
	if serr != nil || !st.Mode().IsRegular() || st.Size() != 0 {
		return err
	}
	for _, p := range []string{g.JournalPath, g.JournalPath + journal.HeadSuffix, g.JournalPath + journal.ServerNoteSuffix, journal.CheckpointsPath(g.JournalPath)} {
		if rerr := os.Remove(p); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
	}
	return err
}
