package serverconf

import (
	"fmt"

	"github.com/mcpsafe/mcpsafe/journal"
)

// defaultJournalError says that the journal that could not be opened is
// the default one, and how to choose another.
func defaultJournalError(path string, err error) error {
	where := "the default journal"
	if path != "" {
		where += " " + path
	}
	return fmt.Errorf("%s cannot be opened (%w): it lives under %s; give --journal PATH in a writable directory, or set XDG_STATE_HOME", where, err, journal.DefaultDirRule())
}
