package serverconf

import "fmt"

// defaultJournalError says that the journal that could not be opened is
// the default one, and how to choose another.
func defaultJournalError(path string, err error) error {
	where := "the default journal"
	if path != "" {
		where += " " + path
	}
	return fmt.Errorf("%s cannot be opened (%w): it lives under $XDG_STATE_HOME/mcpsafe (default ~/.local/state/mcpsafe); give --journal PATH in a writable directory, or set XDG_STATE_HOME", where, err)
}
