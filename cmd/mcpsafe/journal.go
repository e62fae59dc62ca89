package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/journal"
)

func init() {
	register("journal", command{
		summary: "list, verify or show audit journals (journal list, journal verify|show [PATH], journal keygen, journal witness serve)",
		run:     runJournal,
	})
}

const journalUsage = `usage:
  mcpsafe journal list                                the default journals, and which server writes each
  mcpsafe journal verify [PATH]                       check the hash chain
  mcpsafe journal verify [PATH] --service-key K       also re-check the approval service's signed
                                                      statement of every channel approval
  mcpsafe journal verify [PATH] --key PUB [--checkpoints FILE]...
                                                      also check it against signed checkpoints
                                                      (default FILE: PATH.checkpoints; repeat for a witness copy)
  mcpsafe journal verify [PATH] --key PUB --witness-url URL --witness-token-file F
                                                      also check it against what an HTTP witness holds
  mcpsafe journal witness serve --dir D --key PUB --token-file F [--listen ADDR]
                                                      keep the checkpoints journals send (another machine)
  mcpsafe journal export [PATH] --format jsonl|ocsf [--out FILE]
                                                      records for a SIEM (verified first; arguments redacted)
  mcpsafe journal keygen NAME SIGNER PUB              write a checkpoint key pair (SIGNER 0600,
                                                      outside the journal's directory)
  mcpsafe journal show [PATH] [--tool X] [--since T]  print records (T: RFC 3339, YYYY-MM-DD, 24h, 7d)
PATH defaults to the only journal in $XDG_STATE_HOME/mcpsafe/ (each server
keeps its own, journal-AUDIENCE[-HASH][+N].jsonl; journal list names their servers);
with several, name one.
A rotated journal (--journal-max-size / --journal-max-age) is read whole:
its sealed segments PATH.FIRST-LAST in order, then PATH. After deleting old
segments (retention), pass --pruned to verify, show and export: without it
a journal that no longer begins at seq 1 is reported as damaged; with --key
a signed checkpoint must still vouch for where it now begins.`

func runJournal(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, journalUsage)
		return 2
	}
	if args[0] == "keygen" {
		return journalKeygen(args[1:], stderr)
	}
	if args[0] == "witness" {
		return journalWitness(args[1:], stdout, stderr)
	}
	if args[0] == "list" {
		return journalList(args[1:], stdout, stderr)
	}
	var fs *flag.FlagSet
	var tool, since, key, format, out, serviceKey, passkeysFile, pagePasskeys, witnessURL, witnessToken *string
	var ckFiles stringList
	var pruned bool
	switch args[0] {
	case "verify":
		fs = newFlags("mcpsafe journal verify", "mcpsafe journal verify [PATH] [--key PUB [--checkpoints FILE]...]   (check the hash chain, the head file and, with --key, the signed checkpoints; exit 1 on any damage)", stderr)
		key = fs.String("key", "", "public key of the checkpoints (from journal keygen)")
		fs.Var(&ckFiles, "checkpoints", "with --key: a checkpoint file to check against (repeatable; default PATH.checkpoints)")
		serviceKey = fs.String("service-key", "", "the approval service's Ed25519 public key (base64): re-check the signed statement of every channel approval")
		passkeysFile = fs.String("passkeys", "", "with --service-key: the approval service's passkeys file, to re-check every stored passkey assertion")
		pagePasskeys = fs.String("page-passkeys", "", "the local approval page's passkeys `FILE` (mcpsafe approval-page enroll): re-check every passkey approval made on the page")
		witnessURL = fs.String("witness-url", "", "with --key: also check against the checkpoints this HTTP witness holds (mcpsafe journal witness serve)")
		witnessToken = fs.String("witness-token-file", "", "with --witness-url: file holding the witness's bearer token")
	case "export":
		fs = newFlags("mcpsafe journal export", "mcpsafe journal export [PATH] --format jsonl|ocsf [--out FILE]   (verify, then write every record for a SIEM; exit 1 and nothing written if the journal is damaged)", stderr)
		format = fs.String("format", "jsonl", "jsonl (the journal's lines) or ocsf (OCSF API Activity events)")
		out = fs.String("out", "", "write to this new file instead of standard output")
	case "show":
		fs = newFlags("mcpsafe journal show", "mcpsafe journal show [PATH] [--tool X] [--since T]   (print records; exit 1 if the journal is damaged)", stderr)
		tool = fs.String("tool", "", "show only this tool")
		since = fs.String("since", "", "show records from this time (RFC 3339, or YYYY-MM-DD in UTC) or this long ago (24h, 7d)")
	case "-h", "-help", "--help":
		fmt.Fprintln(stdout, journalUsage)
		return 0
	default:
		fmt.Fprintf(stderr, "mcpsafe journal: unknown subcommand %q\n%s\n", args[0], journalUsage)
		return 2
	}
	fs.BoolVar(&pruned, "pruned", false, "accept a rotated journal whose oldest segments were deleted (it begins after seq 1); with --key a signed checkpoint must vouch for where it begins")
	if wantsHelp(args[1:]) {
		fs.SetOutput(stdout)
		fs.Usage()
		return 0
	}
	// Flags may come before or after PATH.
	var paths []string
	rest := args[1:]
	for {
		if err := fs.Parse(rest); err != nil {
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		paths = append(paths, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(paths) > 1 {
		fmt.Fprintln(stderr, journalUsage)
		return 2
	}
	path := ""
	if len(paths) == 1 {
		path = paths[0]
	} else {
		dir, found, err := journal.DefaultJournals()
		switch {
		case err != nil:
			fmt.Fprintln(stderr, "mcpsafe journal:", err)
			return 1
		case len(found) == 0:
			fmt.Fprintf(stderr, "mcpsafe journal: no journal in %s; name one: mcpsafe journal %s PATH\n", dir, args[0])
			return 1
		case len(found) > 1:
			fmt.Fprintf(stderr, "mcpsafe journal: %d journals in %s; name one:\n", len(found), dir)
			for _, p := range found {
				fmt.Fprintf(stderr, "  mcpsafe journal %s %s\t(%s)\n", args[0], p, strings.SplitN(journalLine(p), "\t", 3)[1])
			}
			return 2
		}
		path = found[0]
	}
	var setOpts []journal.SetOption
	if pruned {
		setOpts = append(setOpts, journal.AllowPruned())
	}
	switch args[0] {
	case "verify":
		if *key == "" && len(ckFiles) > 0 {
			fmt.Fprintln(stderr, "mcpsafe journal verify: --checkpoints needs --key")
			return 2
		}
		if *key == "" && *witnessURL != "" {
			fmt.Fprintln(stderr, "mcpsafe journal verify: --witness-url needs --key (the witness's checkpoints are checked with it)")
			return 2
		}
		if (*witnessURL == "") != (*witnessToken == "") {
			fmt.Fprintln(stderr, "mcpsafe journal verify: --witness-url and --witness-token-file go together")
			return 2
		}
		var wc *journal.WitnessClient
		var wrep journal.WitnessReport
		sum, err := journal.VerifyFile(path, setOpts...)
		var rep journal.CheckpointReport
		if err == nil && *key != "" {
			v, kerr := journal.LoadCheckpointVerifier(*key)
			if kerr != nil {
				fmt.Fprintln(stderr, "mcpsafe journal verify:", kerr)
				return 1
			}
			if *witnessURL != "" {
				tok, terr := journal.LoadWitnessToken(*witnessToken)
				if terr != nil {
					fmt.Fprintln(stderr, "mcpsafe journal verify:", terr)
					return 1
				}
				wc = &journal.WitnessClient{URL: *witnessURL, Token: tok}
				sum, rep, wrep, err = journal.VerifyWitnessed(context.Background(), path, v, wc, ckFiles, setOpts...)
			} else {
				sum, rep, err = journal.VerifySignedSet(path, v, ckFiles, setOpts...)
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", path, err)
			var te *journal.TamperError
			var tr *journal.TornError
			if errors.As(err, &te) || errors.As(err, &tr) {
				fmt.Fprintf(stderr, "%s: the %d records before it verify; last good hash %s\n", path, sum.Records, sum.LastHash)
			}
			return 1
		}
		fmt.Fprintf(stdout, "%s: %s\n", path, sum)
		if *key != "" {
			fmt.Fprintf(stdout, "%s: %s\n", path, rep)
		}
		if wc != nil {
			fmt.Fprintf(stdout, "%s: %s\n", path, wrep)
		}
		if *pagePasskeys != "" {
			if code := checkPageEvidence(path, *pagePasskeys, stdout, stderr); code != 0 {
				return code
			}
		}
		if *serviceKey != "" {
			return checkEvidence(path, *serviceKey, *passkeysFile, stdout, stderr)
		}
		return 0
	case "export":
		var err error
		if *out != "" {
			_, err = journal.ExportFile(*out, path, *format, setOpts...)
		} else {
			_, err = journal.Export(stdout, path, *format, setOpts...)
		}
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", path, err)
			return 1
		}
		return 0
	case "show":
		var f journal.Filter
		f.Tool = *tool
		if *since != "" {
			t, err := journal.ParseSince(*since, time.Now())
			if err != nil {
				fmt.Fprintln(stderr, "mcpsafe "+err.Error()) // err starts "journal: "
				return 2
			}
			f.Since = t
		}
		if err := journal.ShowFile(stdout, path, f, setOpts...); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", path, err)
			return 1
		}
		return 0
	default:
		fmt.Fprintf(stderr, "mcpsafe journal: unknown subcommand %q\n%s\n", args[0], journalUsage)
		return 2
	}
}

// journalList prints the default journals, one a line: path, the server
// that writes it (from the note beside it) and when it was last written.
func journalList(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("mcpsafe journal list", "mcpsafe journal list   (the default journals in $XDG_STATE_HOME/mcpsafe/, and which server writes each)", stderr)
	if code, done := parseFlags(fs, args, stdout); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mcpsafe journal list: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	dir, found, err := journal.DefaultJournals()
	if err != nil {
		fmt.Fprintln(stderr, "mcpsafe journal:", err)
		return 1
	}
	if len(found) == 0 {
		fmt.Fprintf(stderr, "mcpsafe journal: no journal in %s\n", dir)
		return 1
	}
	for _, p := range found {
		fmt.Fprintln(stdout, journalLine(p))
	}
	return 0
}

// journalLine describes one default journal. The note is the server's
// own, but shown to a person: control characters are replaced.
func journalLine(p string) string {
	note := journal.ServerNote(p)
	if note == "" {
		note = "(no note of its server)"
	}
	note = strings.Map(func(r rune) rune {
		if r < 0x20 || (r >= 0x7f && r < 0xa0) || r == '\u2028' || r == '\u2029' {
			return '?'
		}
		return r
	}, note)
	when := "never written"
	if fi, err := os.Stat(p); err == nil {
		when = "last written " + fi.ModTime().UTC().Format(time.RFC3339)
	}
	return p + "\t" + note + "\t" + when
}

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// journalKeygen writes a checkpoint key pair. The signer file is created
// exclusively with mode 0600: an existing key is never overwritten.
func journalKeygen(args []string, stderr io.Writer) int {
	if len(args) != 3 {
		fmt.Fprintln(stderr, journalUsage)
		return 2
	}
	skey, vkey, err := journal.GenerateCheckpointKey(args[0])
	if err != nil {
		fmt.Fprintln(stderr, "mcpsafe journal keygen:", err)
		return 1
	}
	for _, w := range []struct {
		path, data string
		mode       os.FileMode
	}{{args[1], skey, 0o600}, {args[2], vkey, 0o644}} {
		f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, w.mode)
		if err == nil {
			_, err = f.WriteString(w.data + "\n")
			err = errors.Join(err, f.Sync(), f.Close())
		}
		if err != nil {
			fmt.Fprintln(stderr, "mcpsafe journal keygen:", err)
			return 1
		}
	}
	return 0
}

// journalLines reads the journal's set as one stream of lines. The chain
// verified, so every file of the set ends in a newline.
func journalLines(path string) (io.Reader, func(), error) {
	names, err := journal.SetFiles(path)
	if err != nil {
		return nil, nil, err
	}
	var readers []io.Reader
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	for _, name := range names {
		f, err := os.Open(name)
		if errors.Is(err, os.ErrNotExist) && name == path && len(names) > 1 {
			continue // a crash mid-rotation: the set ends with its last segment
		}
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		files = append(files, f)
		readers = append(readers, f)
	}
	return io.MultiReader(readers...), closeAll, nil
}

// checkPageEvidence re-checks the passkey approvals made on the local page.
func checkPageEvidence(path, passkeysFile string, stdout, stderr io.Writer) int {
	reg, err := channel.LoadPasskeyRegistry(passkeysFile)
	if err != nil {
		fmt.Fprintln(stderr, "mcpsafe journal verify: --page-passkeys:", err)
		return 1
	}
	lines, done, err := journalLines(path)
	if err != nil {
		fmt.Fprintln(stderr, "mcpsafe journal verify:", err)
		return 1
	}
	defer done()
	n, err := channel.CheckPageJournal(lines, reg)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", path, err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: %d passkey approvals on the approval page carry a valid assertion of a passkey in %s\n", path, n, passkeysFile)
	return 0
}

// checkEvidence re-checks the signed statements of channel approvals.
func checkEvidence(path, key, passkeysFile string, stdout, stderr io.Writer) int {
	pub, err := channel.ParsePublicKey(key)
	if err != nil {
		fmt.Fprintln(stderr, "mcpsafe journal verify: --service-key:", err)
		return 2
	}
	lines, done, err := journalLines(path)
	if err != nil {
		fmt.Fprintln(stderr, "mcpsafe journal verify:", err)
		return 1
	}
	defer done()
	var reg *channel.PasskeyRegistry
	if passkeysFile != "" {
		if reg, err = channel.LoadPasskeyRegistry(passkeysFile); err != nil {
			fmt.Fprintln(stderr, "mcpsafe journal verify:", err)
			return 1
		}
	}
	n, err := channel.CheckJournal(lines, pub, reg)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", path, err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: %d channel approvals carry a valid signature of the approval service\n", path, n)
	return 0
}
