package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe/approvals"
)

// `approvals passwd` stores a hash that serve then accepts; a plain-text
// file makes serve refuse, naming the command that converts it.
func TestApprovalsPasswd(t *testing.T) {
	sf, _ := approvalsFiles(t)
	dir := t.TempDir()
	af := filepath.Join(dir, "approvers")
	passwd := func(stdin string, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := runApprovalsPasswd(args, strings.NewReader(stdin), &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, _, msg := passwd("alice-token-0123456789\n", "--approvers-file", af, "alice"); code != 0 {
		t.Fatalf("passwd alice: exit %d: %s", code, msg)
	}
	if code, _, msg := passwd("short\n", "--approvers-file", af, "bob"); code != 1 || !strings.Contains(msg, "shorter than 16") {
		t.Fatalf("short password: exit %d: %s", code, msg)
	}
	if code, _, _ := passwd("x\n", "--approvers-file", af); code != 2 {
		t.Fatalf("no NAME: exit %d, want 2", code)
	}
	data, _ := os.ReadFile(af)
	if strings.Contains(string(data), "alice-token-0123456789") || !strings.HasPrefix(string(data), "alice:$argon2id$") {
		t.Fatalf("file holds %q", data)
	}
	list, err := approvals.LoadApproversFile(af)
	if err != nil || len(list) != 1 || !approvals.VerifyPassword(list[0].Hash, "alice-token-0123456789") {
		t.Fatalf("control: %+v, %v", list, err)
	}

	// Attack: somebody adds a plain-text line; serve refuses to start.
	f, _ := os.OpenFile(af, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("bob:bob-token-0123456789ab\n")
	f.Close()
	var out, errb bytes.Buffer
	code := run([]string{"approvals", "serve", "--listen", "127.0.0.1:0", "--secret-file", sf, "--approvers-file", af}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "plain-text password") || !strings.Contains(errb.String(), "mcpsafe approvals passwd --approvers-file "+af+" --convert") {
		t.Fatalf("serve with a plain-text file: exit %d, %q", code, errb.String())
	}
	if code, msg, _ := passwd("", "--approvers-file", af, "--convert"); code != 0 || !strings.Contains(msg, "hashed 1") {
		t.Fatalf("convert: exit %d, %q", code, msg)
	}
	if _, err := approvals.LoadApproversFile(af); err != nil {
		t.Fatalf("after convert: %v", err)
	}
}
