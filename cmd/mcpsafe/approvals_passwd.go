package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/mcpsafe/mcpsafe/approvals"
)

// runApprovalsPasswd sets one approver's password (read from stdin, so it
// never shows in the process list or shell history) or converts a
// plain-text approvers file to argon2id hashes.
func runApprovalsPasswd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := newFlags("mcpsafe approvals passwd", "mcpsafe approvals passwd --approvers-file PATH NAME   (new password on stdin)\nmcpsafe approvals passwd --approvers-file PATH --convert", stderr)
	file := fl.String("approvers-file", "", "the approvers file to update (created with mode 0600 if missing)")
	convert := fl.Bool("convert", false, "hash every plain-text password in the file in place")
	if code, done := parseFlags(fl, args, stdout); done {
		return code
	}
	if *file == "" {
		fmt.Fprintln(stderr, "mcpsafe approvals passwd: --approvers-file is required")
		return 2
	}
	if *convert {
		if fl.NArg() != 0 {
			fmt.Fprintln(stderr, "mcpsafe approvals passwd: --convert takes no NAME")
			return 2
		}
		n, err := approvals.ConvertApproversFile(*file)
		if err != nil {
			fmt.Fprintln(stderr, "mcpsafe approvals passwd:", err)
			return 1
		}
		fmt.Fprintf(stdout, "mcpsafe approvals passwd: hashed %d plain-text password(s) in %s\n", n, *file)
		return 0
	}
	if fl.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: mcpsafe approvals passwd --approvers-file PATH NAME   (new password on stdin)")
		return 2
	}
	name := fl.Arg(0)
	line, err := bufio.NewReader(io.LimitReader(stdin, 4096)).ReadString('\n')
	if err != nil && err != io.EOF {
		fmt.Fprintln(stderr, "mcpsafe approvals passwd: reading the password:", err)
		return 1
	}
	pw := strings.TrimRight(line, "\r\n")
	if err := approvals.SetPassword(*file, name, pw); err != nil {
		fmt.Fprintln(stderr, "mcpsafe approvals passwd:", err)
		return 1
	}
	fmt.Fprintf(stdout, "mcpsafe approvals passwd: password for %s stored as an argon2id hash in %s\n", name, *file)
	return 0
}
