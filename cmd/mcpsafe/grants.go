package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"text/tabwriter"
	"time"

	"github.com/mcpsafe/mcpsafe/grants"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/mcpsafe/mcpsafe/prompt"
)

func init() {
	register("grants", command{
		summary: "list or revoke standing grants in a shared ledger (grants list|revoke)",
		run:     runGrants,
	})
}

const grantsUsage = `usage:
  mcpsafe grants list   --ledger URL [--json]
  mcpsafe grants revoke --ledger URL [--journal PATH] (ID | --principal P | --tool T)
The ledger is the one the servers share (file:PATH, redis://..., postgres://...).
A revocation is effective on every replica sharing it before the command returns.
A server sharing the ledger journals each revocation (grant-ended, revoked,
by this user via mcpsafe grants revoke) within its sweep interval, or when it
next starts. --journal, for when no server will run again, journals it here
instead, into a journal no server holds open (a server's journal is locked
while it runs); an end a server already journaled is not journaled twice.`

func runGrants(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "list" && args[0] != "revoke") {
		fmt.Fprintln(stderr, grantsUsage)
		return 2
	}
	fs := flag.NewFlagSet("grants "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("ledger", "", "ledger URL")
	asJSON := fs.Bool("json", false, "list: print JSON")
	principal := fs.String("principal", "", "revoke: every grant of this principal")
	tool := fs.String("tool", "", "revoke: every grant for this tool")
	jpath := fs.String("journal", "", "revoke: journal to record the revocations in")
	var ids []string
	rest := args[1:]
	for {
		if err := fs.Parse(rest); err != nil {
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		ids = append(ids, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if *url == "" {
		fmt.Fprintln(stderr, "mcpsafe grants: --ledger is required\n"+grantsUsage)
		return 2
	}
	ctx := context.Background()
	store, err := ledger.Open(ctx, *url)
	if err != nil {
		fmt.Fprintln(stderr, "mcpsafe grants:", err)
		return 1
	}
	defer store.Close()
	ss := store.Standing()
	if ss == nil {
		fmt.Fprintln(stderr, "mcpsafe grants: this ledger keeps no standing grants")
		return 1
	}
	if args[0] == "list" {
		if len(ids) > 0 || *principal != "" || *tool != "" || *jpath != "" {
			fmt.Fprintln(stderr, grantsUsage)
			return 2
		}
		list, err := grants.List(ctx, ss)
		if err != nil {
			fmt.Fprintln(stderr, "mcpsafe grants:", err)
			return 1
		}
		return printGrants(stdout, list, *asJSON)
	}
	sel := 0
	for _, on := range []bool{len(ids) > 0, *principal != "", *tool != ""} {
		if on {
			sel++
		}
	}
	if sel != 1 || len(ids) > 1 || *asJSON {
		fmt.Fprintln(stderr, "mcpsafe grants revoke: name exactly one of ID, --principal or --tool\n"+grantsUsage)
		return 2
	}
	var j *journal.Journal
	if *jpath != "" {
		if j, err = journal.Open(*jpath); err != nil {
			fmt.Fprintln(stderr, "mcpsafe grants revoke:", err)
			return 1
		}
		defer j.Close()
	}
	ended, err := grants.Revoke(ctx, ss, revoker()+" via mcpsafe grants revoke", func(g grants.Info) bool {
		switch {
		case len(ids) == 1:
			return g.ID == ids[0]
		case *principal != "":
			return g.Principal == *principal
		default:
			return g.Tool == *tool
		}
	})
	for _, g := range ended {
		fmt.Fprintf(stdout, "revoked %s (%s for %s, %d of %d uses left)\n", g.ID, prompt.Quote(g.Tool), prompt.Quote(g.Principal), g.UsesLeft, g.Uses)
		if j != nil {
			if jerr := journalRevocation(ctx, ss, j, g); jerr != nil {
				fmt.Fprintln(stderr, "mcpsafe grants revoke: journal:", jerr)
				err = jerr
			}
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "mcpsafe grants revoke:", err)
		return 1
	}
	if len(ended) == 0 {
		fmt.Fprintln(stderr, "mcpsafe grants revoke: no live grant matched")
		return 1
	}
	return 0
}

// journalRevocation journals a revocation if no server has: the end is
// claimed in the ledger first, as a server's sweep claims it.
func journalRevocation(ctx context.Context, ss ledger.StandingStore, j *journal.Journal, g grants.Info) error {
	e, won, err := ss.ClaimStandingEnd(ctx, g.ID)
	if err != nil || !won {
		return err // !won: a server sharing the ledger claimed it to journal it
	}
	return j.Append(ctx, journal.Record{Tool: g.Tool, Principal: g.Principal, Decision: journal.GrantEnded, Grant: g.ID,
		Reason: e.Reason, By: e.By, Summary: "revoked with mcpsafe grants revoke"})
}

// revoker names who runs the command, as the ledger will keep it.
func revoker() string {
	u, err := user.Current()
	if err != nil || u.Username == "" {
		return "an unknown user"
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		return u.Username + "@" + h
	}
	return u.Username
}

func printGrants(w io.Writer, list []grants.Info, asJSON bool) int {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if list == nil {
			list = []grants.Info{}
		}
		if err := enc.Encode(list); err != nil {
			return 1
		}
		return 0
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTOOL\tPRINCIPAL\tSCOPE\tUSES LEFT\tEXPIRES\tBY")
	for _, g := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d of %d\t%s\t%s\n", g.ID, prompt.Quote(g.Tool), prompt.Quote(g.Principal),
			prompt.Quote(g.Scope), g.UsesLeft, g.Uses, g.ExpiresAt.UTC().Format(time.RFC3339), prompt.Quote(g.By))
	}
	return boolExit(tw.Flush() == nil)
}

func boolExit(ok bool) int {
	if ok {
		return 0
	}
	return 1
}
