// Package optin reads a token opt-in as flags and policy files write it:
// TOOL, or TOOL@YYYY-MM-DD (valid until the start of that day, UTC). The
// CLI's flags (internal/serverconf) and the proxy's policy file share it.
package optin

import (
	"fmt"
	"strings"
	"time"

	"github.com/mcpsafe/mcpsafe"
)

// Parse reads one token opt-in. An opt-in that has already expired is an
// error: it could only be a mistake.
func Parse(v string) (mcpsafe.OptIn, error) {
	return ParseAt(v, time.Now())
}

// ParseAt is Parse at the time now.
func ParseAt(v string, now time.Time) (mcpsafe.OptIn, error) {
	name, until, found := strings.Cut(v, "@")
	o := mcpsafe.OptIn{Tool: name}
	if name == "" || strings.ContainsAny(name, "*?[] \t\r\n") {
		return o, fmt.Errorf("token opt-in %q is not an exact tool name: no wildcards, patterns or spaces", v)
	}
	if found {
		t, err := time.Parse("2006-01-02", until)
		if err != nil {
			return o, fmt.Errorf("token opt-in %q: expiry must be YYYY-MM-DD", v)
		}
		if !now.Before(t) {
			return o, fmt.Errorf("token opt-in %q expired at the start of %s (UTC): remove it or give a later date", v, until)
		}
		o.Until = t
	}
	return o, nil
}
