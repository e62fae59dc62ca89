package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/mcpsafe/mcpsafe/approvalpage"
)

func init() {
	register("approval-page", command{summary: "register a passkey for the local approval page (--approval-page)", run: runApprovalPage})
}

// runApprovalPage runs `mcpsafe approval-page enroll`: the person registers
// a passkey in their browser; its public key goes to the passkeys file the
// server reads at start (--approval-page-passkeys). The running page has no
// way to add one.
func runApprovalPage(args []string, stdout, stderr io.Writer) int {
	const synopsis = "mcpsafe approval-page enroll --passkeys FILE --name NAME [--listen 127.0.0.1:0]"
	if len(args) == 0 || args[0] != "enroll" {
		if wantsHelp(args) {
			fmt.Fprintln(stdout, "usage: "+synopsis)
			return 0
		}
		fmt.Fprintln(stderr, "usage: "+synopsis)
		return 2
	}
	fl := newFlags("mcpsafe approval-page enroll", synopsis, stderr)
	file := fl.String("passkeys", "", "the passkeys `FILE` to add the passkey to (created with mode 0600); the server reads it with --approval-page-passkeys")
	name := fl.String("name", "", "whose passkey it is, as the journal names the approver (a-z 0-9 . _ @ + -)")
	listen := fl.String("listen", "127.0.0.1:0", "the loopback `ADDR` of the registration page")
	if code, done := parseFlags(fl, args[1:], stdout); done {
		return code
	}
	if *file == "" || *name == "" || fl.NArg() != 0 {
		fmt.Fprintln(stderr, "usage: "+synopsis)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var launcher *approvalpage.Launcher
	k, err := approvalpage.Enroll(ctx, approvalpage.EnrollOptions{File: *file, Name: *name, Addr: *listen,
		Open: func(link string) error {
			// The person's terminal: the link, in case no browser opens.
			// The browser gets it through a launcher file, never on a
			// command line.
			fmt.Fprintf(stderr, "mcpsafe approval-page: register your passkey at %s\n", link)
			var err error
			launcher, err = approvalpage.OpenBrowser(link)
			return err
		}})
	if launcher != nil {
		launcher.Remove()
	}
	if err != nil {
		fmt.Fprintln(stderr, "mcpsafe approval-page enroll:", err)
		return 1
	}
	fmt.Fprintf(stdout, "mcpsafe approval-page: passkey %s of %s stored in %s; restart the server with --approval-page-passkeys %s to require it\n", k.CredentialID, k.Approver, *file, *file)
	return 0
}
