// Package optincheck holds the error of the gate's check of its opt-ins
// (mcpsafe.Gate.CheckOptIns), which the CLI and the proxy read to say the
// problem in the words of their own flag or policy key.
package optincheck

import (
	"fmt"
	"strings"
)

// Error is mcpsafe.Gate.CheckOptIns' error: an opt-in (AllowTokenFor or
// AllowGrantsFor) names a tool it cannot apply to. Valid lists the tools
// it could name instead, so that a command can say so in its own words
// (Say) instead of the option's Go name.
type Error struct {
	Option  string // "AllowTokenFor" or "AllowGrantsFor"
	Tool    string
	Problem string   // "is not a gated tool of this server", ...
	Valid   []string // the tools this option could name, sorted
}

func (e *Error) Error() string { return "mcpsafe: " + e.Say(e.Option) }

// Say is the error with the option spelled as the operator wrote it (a
// flag such as --allow-token-for, or a policy key such as allow_token_for).
func (e *Error) Say(option string) string {
	msg := fmt.Sprintf("%s names %q, which %s", option, e.Tool, e.Problem)
	if len(e.Valid) == 0 {
		return msg + "; no tool of this server can be named there"
	}
	return msg + "; it can name: " + strings.Join(e.Valid, ", ")
}
