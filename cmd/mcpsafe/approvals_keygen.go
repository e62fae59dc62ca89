package main

import (
	"fmt"
	"io"

	"github.com/mcpsafe/mcpsafe/channel"
)

// runApprovalsKeygen creates the service's signing key and prints the
// public key the gates are given.
func runApprovalsKeygen(args []string, stdout, stderr io.Writer) int {
	fl := newFlags("mcpsafe approvals keygen", "mcpsafe approvals keygen --signing-key-file PATH   (prints the public key for --approver-public-key)", stderr)
	file := fl.String("signing-key-file", "", "where to write the new key (must not exist; mode 0600)")
	if code, done := parseFlags(fl, args, stdout); done {
		return code
	}
	if *file == "" || fl.NArg() != 0 {
		fmt.Fprintln(stderr, "usage: mcpsafe approvals keygen --signing-key-file PATH")
		return 2
	}
	pub, err := channel.GenerateSigningKeyFile(*file)
	if err != nil {
		fmt.Fprintln(stderr, "mcpsafe approvals keygen:", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s\n", channel.EncodePublicKey(pub))
	return 0
}
