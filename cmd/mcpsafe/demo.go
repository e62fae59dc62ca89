package main

import (
	"context"
	"fmt"
	"io"

	"github.com/mcpsafe/mcpsafe/internal/demo"
)

func init() {
	register("demo", command{summary: "show both approval flows end to end in a temporary directory", run: runDemo})
}

func runDemo(args []string, stdout, stderr io.Writer) int {
	fl := newFlags("mcpsafe demo", "mcpsafe demo [--keep]   (both approval flows, end to end, in a temporary directory)", stderr)
	keep := fl.Bool("keep", false, "keep the demo's directory (workspace and journal) to inspect afterwards")
	if code, done := parseFlags(fl, args, stdout); done {
		return code
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "mcpsafe demo: unexpected argument %q\n", fl.Arg(0))
		return 2
	}
	if err := demo.Run(context.Background(), stdout, *keep); err != nil {
		fmt.Fprintln(stderr, "mcpsafe demo:", err)
		return 1
	}
	return 0
}
