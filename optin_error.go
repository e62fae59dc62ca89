package mcpsafe

import (
	"fmt"
	"sort"
	"strings"
)

// OptInError is CheckOptIns' error: an opt-in (AllowTokenFor or
// AllowGrantsFor) names a tool it cannot apply to. Valid lists the tools
// it could name instead, so that a command can say so in its own words
// (Say) instead of the option's Go name.
type OptInError struct {
	Option  string // "AllowTokenFor" or "AllowGrantsFor"
	Tool    string
	Problem string   // "is not a gated tool of this server", ...
	Valid   []string // the tools this option could name, sorted
}

func (e *OptInError) Error() string { return "mcpsafe: " + e.Say(e.Option) }

// Say is the error with the option spelled as the operator wrote it (a
// flag such as --allow-token-for, or a policy key such as allow_token_for).
func (e *OptInError) Say(option string) string {
	msg := fmt.Sprintf("%s names %q, which %s", option, e.Tool, e.Problem)
	if len(e.Valid) == 0 {
		return msg + "; no tool of this server can be named there"
	}
	return msg + "; it can name: " + strings.Join(e.Valid, ", ")
}

// optInCandidates lists the tools an opt-in could name: the irreversible
// gated tools, and for grants only those with a grant policy. The caller
// holds g.mu.
func (g *Gate) optInCandidates(grants bool) []string {
	var out []string
	for name, t := range g.tools {
		if t.Irreversible && (!grants || t.Grants != nil) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
