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
	if len(args) > 0 {
		fmt.Fprintln(stderr, "usage: mcpsafe demo")
		return 2
	}
	if err := demo.Run(context.Background(), stdout); err != nil {
		fmt.Fprintln(stderr, "mcpsafe demo:", err)
		return 1
	}
	return 0
}
