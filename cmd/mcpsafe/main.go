// Command mcpsafe runs the ready-made mcpsafe servers and tools.
//
// Each subcommand lives in its own file and registers itself in init, so
// that this file only dispatches: flags go to a library call, nothing more.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
)

// command is one subcommand. run returns the process exit code.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

var commands = map[string]command{}

func register(name string, c command) {
	if _, dup := commands[name]; dup {
		panic("mcpsafe: duplicate command " + name)
	}
	commands[name] = c
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			if c, ok := commands[args[1]]; ok {
				return c.run([]string{"--help"}, stdout, stderr)
			}
		}
		usage(stdout)
		return 0
	case "-version", "--version":
		return runVersion(nil, stdout, stderr)
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "mcpsafe: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	return c.run(args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: mcpsafe <command> [flags]      (mcpsafe <command> --help for its flags)")
	fmt.Fprintln(w, "       mcpsafe --version")
	fmt.Fprintln(w)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
}
