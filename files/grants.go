package files

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/grants"
	"github.com/mcpsafe/mcpsafe/ledger"
)

// Grants makes delete_file and move_file offer standing grants: when a
// person approves one call, they may approve instead "this, and calls like
// it in the same directory, for a while and a number of uses". Nothing is
// offered for a tool not named in Tools.
type Grants struct {
	// Tools names the tools that offer grants (DeleteFile, MoveFile).
	// delete_file is irreversible: naming it here is its opt-in.
	Tools []string
	// MaxTTL and MaxUses are the ceiling of what a person may grant
	// (DefaultGrantMaxTTL and DefaultGrantMaxUses when zero). A shorter
	// grant (15 minutes, 3 uses) is always offered beside it.
	MaxTTL  time.Duration
	MaxUses int
	// ClientRelayed lets an elicitation answer (relayed by the client)
	// create a grant. Without it grants are offered only through the
	// approval channel, whose approvers are authenticated.
	ClientRelayed bool
}

const (
	// DefaultGrantMaxTTL is the longest grant offered when Grants.MaxTTL is zero.
	DefaultGrantMaxTTL = time.Hour
	// DefaultGrantMaxUses is the most uses offered when Grants.MaxUses is zero.
	DefaultGrantMaxUses = 20
)

// check fills in the defaults and refuses what cannot be meant.
func (g *Grants) check() error {
	if len(g.Tools) == 0 {
		if g.MaxTTL != 0 || g.MaxUses != 0 || g.ClientRelayed {
			return errors.New("grant limits given but no tool offers grants: name one with --grants TOOL")
		}
		return nil
	}
	seen := map[string]bool{}
	for _, n := range g.Tools {
		if n != DeleteFile && n != MoveFile {
			return fmt.Errorf("--grants %q: only %s and %s can offer standing grants (exact names)", n, DeleteFile, MoveFile)
		}
		if seen[n] {
			return fmt.Errorf("--grants %s given twice", n)
		}
		seen[n] = true
	}
	if g.MaxTTL == 0 {
		g.MaxTTL = DefaultGrantMaxTTL
	}
	if g.MaxUses == 0 {
		g.MaxUses = DefaultGrantMaxUses
	}
	if g.MaxTTL < 0 {
		return fmt.Errorf("--grant-max-ttl %s: want a positive duration", g.MaxTTL)
	}
	if g.MaxUses < 2 || g.MaxUses > ledger.MaxStandingUses {
		return fmt.Errorf("--grant-max-uses %d: want 2..%d (one use is an ordinary approval)", g.MaxUses, ledger.MaxStandingUses)
	}
	return nil
}

// policy is the GrantPolicy of tool, or nil when it offers none.
func (g Grants) policy(tool string) *mcpsafe.GrantPolicy {
	if !slices.Contains(g.Tools, tool) {
		return nil
	}
	p := &mcpsafe.GrantPolicy{MaxTTL: g.MaxTTL, MaxUses: g.MaxUses, ClientRelayed: g.ClientRelayed}
	switch tool {
	case DeleteFile:
		p.Scopes = func(_ mcpsafe.Call, r mcpsafe.Resolved) ([]grants.Scope, error) {
			dir, err := resolvedDir(r, "path")
			if err != nil {
				return nil, err
			}
			return []grants.Scope{{
				Words: "files directly in " + dir + "/",
				CEL:   "tool == " + celString(DeleteFile) + " && " + directlyIn("path", dir),
			}}, nil
		}
	case MoveFile:
		p.Scopes = func(_ mcpsafe.Call, r mcpsafe.Resolved) ([]grants.Scope, error) {
			from, err := resolvedDir(r, "path")
			if err != nil {
				return nil, err
			}
			to, err := resolvedDir(r, "destination")
			if err != nil {
				return nil, err
			}
			return []grants.Scope{{
				Words: "moves of files directly in " + from + "/ to " + to + "/",
				CEL:   "tool == " + celString(MoveFile) + " && " + directlyIn("path", from) + " && " + directlyIn("destination", to),
			}}, nil
		}
	}
	return p
}

// resolvedDir is the directory of the resolved (absolute, symlink-free,
// inside a root) path under key: what a grant scope is anchored on. The
// agent's own spelling of the path never is: "tmp/../etc" and "tmp//x"
// resolve before any scope sees them.
func resolvedDir(r mcpsafe.Resolved, key string) (string, error) {
	p, ok := r[key].(string)
	if !ok || !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return "", fmt.Errorf("no resolved %s to anchor a grant on", key)
	}
	return filepath.Dir(p), nil
}

// directlyIn is CEL that holds when resolved[key] names an entry directly
// in dir: dir is matched as literal text (regexp.QuoteMeta), and written
// into the expression as a JSON string, which is also a valid CEL string
// literal, so that no file name can end the literal or widen the pattern.
func directlyIn(key, dir string) string {
	prefix := dir + "/"
	if dir == "/" {
		prefix = "/"
	}
	re := "^" + regexp.QuoteMeta(prefix) + "[^/]+$"
	return "resolved[" + celString(key) + "].matches(" + celString(re) + ")"
}

// celString writes s as a CEL string literal: JSON's escapes (\" \\ \n \t
// \uXXXX, and \u003c for the HTML-sensitive characters) are all CEL
// escapes with the same meaning.
func celString(s string) string {
	var b []byte
	b, _ = json.Marshal(s) // a string always marshals
	return string(b)
}
