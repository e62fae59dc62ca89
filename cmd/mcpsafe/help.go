package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/mcpsafe/mcpsafe/files"
	"github.com/mcpsafe/mcpsafe/internal/optincheck"
	mver "github.com/mcpsafe/mcpsafe/internal/version"
	"github.com/mcpsafe/mcpsafe/proxy"
	"golang.org/x/mod/module"
)

func init() {
	register("version", command{summary: "print the version of this build", run: runVersion})
	v := version()
	files.Version, proxy.Version = v, v
}

// firstFlags are the few flags a newcomer needs, per command: --help
// shows them first, the rest after.
var firstFlags = map[string][]string{
	"mcpsafe files":           {"root", "mode", "http", "journal", "approval-page", "allow-token-for", "approver-url", "approver-secret-file"},
	"mcpsafe proxy":           {"policy", "config", "upstream-url", "http", "journal", "approval-page", "approver-url", "approver-secret-file"},
	"mcpsafe approvals serve": {"secret-file", "approvers-file", "listen", "store", "journal"},
}

// newFlags is a flag set whose usage starts with the command's synopsis.
func newFlags(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fl := flag.NewFlagSet(name, flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() {
		w := fl.Output()
		fmt.Fprintln(w, "usage: "+strings.ReplaceAll(synopsis, "\n", "\n       "))
		n := 0
		fl.VisitAll(func(*flag.Flag) { n++ })
		if n == 0 {
			return
		}
		first := firstFlags[name]
		if len(first) == 0 {
			fmt.Fprintln(w, "\nflags:")
			fl.PrintDefaults()
			return
		}
		fmt.Fprintln(w, "\nthe flags to start with:")
		shown := map[string]bool{}
		for _, n := range first {
			if f := fl.Lookup(n); f != nil {
				printFlag(w, f)
				shown[n] = true
			}
		}
		fmt.Fprintln(w, "\nall other flags:")
		fl.VisitAll(func(f *flag.Flag) {
			if !shown[f.Name] {
				printFlag(w, f)
			}
		})
	}
	return fl
}

// printFlag prints one flag as flag.PrintDefaults does.
func printFlag(w io.Writer, f *flag.Flag) {
	name, usage := flag.UnquoteUsage(f)
	line := "  -" + f.Name
	if name != "" {
		line += " " + name
	}
	if len(line) <= 4 {
		line += "\t"
	} else {
		line += "\n    \t"
	}
	line += strings.ReplaceAll(usage, "\n", "\n    \t")
	switch f.DefValue {
	case "", "false", "0", "0s", "[]":
	default:
		if fmt.Sprintf("%T", f.Value) == "*flag.stringValue" {
			line += fmt.Sprintf(" (default %q)", f.DefValue)
		} else {
			line += fmt.Sprintf(" (default %v)", f.DefValue)
		}
	}
	fmt.Fprintln(w, line)
}

// parseFlags parses args into fl. When done, the command ends with code:
// 0 after --help (usage on stdout), 2 after a bad flag (one line and a
// hint on stderr, not the whole usage).
func parseFlags(fl *flag.FlagSet, args []string, stdout io.Writer) (code int, done bool) {
	if wantsHelp(args) {
		fl.SetOutput(stdout)
		fl.Usage()
		return 0, true
	}
	out := fl.Output()
	fl.SetOutput(io.Discard)
	err := fl.Parse(args)
	fl.SetOutput(out)
	if err != nil {
		fmt.Fprintf(out, "%s: %v\nrun '%s --help' for its flags\n", fl.Name(), err, fl.Name())
		return 2, true
	}
	return 0, false
}

// wantsHelp reports a -h, -help or --help before any "--" (after it, the
// arguments belong to the proxy's upstream command).
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// version is the release tag of a release build (scripts/release sets
// version.Tag), else the module version of this build with the commit it
// was built from, both read from the build info (see versionOf).
func version() string {
	if mver.Tag != "" {
		return mver.Tag
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return versionOf(bi)
}

// versionOf names a build: its module version (a tag for `go install
// ...@v1.2.3`, a pseudo-version for `@latest` or `@COMMIT` without a tag,
// "(devel)" for a build from a checkout) and the commit: the one a
// checkout build recorded (vcs.revision, "+dirty" when the tree had
// changes), or the one a pseudo-version names. A tag alone names its
// commit already.
func versionOf(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" && module.IsPseudoVersion(v) {
		rev, _ = module.PseudoVersionRev(v)
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		v += " commit " + rev
		if modified == "true" {
			v += "+dirty"
		}
	}
	return v
}

func runVersion(args []string, stdout, stderr io.Writer) int {
	fl := newFlags("mcpsafe version", "mcpsafe version", stderr)
	if code, done := parseFlags(fl, args, stdout); done {
		return code
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "mcpsafe version: unexpected argument %q\n", fl.Arg(0))
		return 2
	}
	bi, _ := debug.ReadBuildInfo()
	goVersion := ""
	if bi != nil {
		goVersion = " " + bi.GoVersion
	}
	fmt.Fprintf(stdout, "mcpsafe %s%s\n", version(), goVersion)
	return 0
}

// errLine is the line a command prints for err: "mcpsafe proxy: ...", with
// the package's own "proxy: " dropped from err so that it is not said twice.
func errLine(name string, err error) string {
	pkg := name[strings.LastIndexByte(name, ' ')+1:]
	msg := strings.TrimPrefix(err.Error(), pkg+": ")
	// A wrapped error of the same package says its name again
	// ("proxy: server a: proxy: connecting upstream"): once is enough.
	msg = strings.ReplaceAll(msg, ": "+pkg+": ", ": ")
	msg = strings.ReplaceAll(msg, "\n"+pkg+": ", "\n")
	return name + ": " + msg
}

// flagWords puts an option's Go name in err into the flag the operator
// wrote (an opt-in error names --allow-token-for, not AllowTokenFor).
func flagWords(err error) error {
	var oe *optincheck.Error
	if !errors.As(err, &oe) {
		return err
	}
	flag := map[string]string{"AllowTokenFor": "--allow-token-for", "AllowGrantsFor": "--grants"}[oe.Option]
	return errors.New(oe.Say(flag))
}
