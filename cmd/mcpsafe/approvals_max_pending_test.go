package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/channel"
)

// --max-pending caps the requests waiting at once: with 2, a third is
// refused until one is decided; 0 is a usage error.
func TestApprovalsServeMaxPending(t *testing.T) {
	sf, af := approvalsFiles(t)
	var out, errb bytes.Buffer
	if code := run([]string{"approvals", "serve", "--listen", "127.0.0.1:0", "--secret-file", sf, "--approvers-file", af, "--max-pending", "0"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "--max-pending") {
		t.Fatalf("--max-pending 0: exit %d, stderr %q", code, errb.String())
	}

	ctx, cancel := context.WithCancel(context.Background())
	orig := approvalsContext
	approvalsContext = func() (context.Context, context.CancelFunc) { return ctx, cancel }
	defer func() { approvalsContext = orig }()
	pr, pw := io.Pipe()
	errb.Reset()
	done := make(chan int, 1)
	go func() {
		code := run([]string{"approvals", "serve", "--listen", "127.0.0.1:0", "--secret-file", sf, "--approvers-file", af, "--max-pending", "2"}, pw, &errb)
		pw.Close()
		done <- code
	}()
	defer func() {
		cancel()
		<-done
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no banner: %v (stderr %s)", err, errb.String())
	}
	go io.Copy(io.Discard, pr)
	base := regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(line)
	secret, err := channel.LoadSecretFile(sf)
	if err != nil {
		t.Fatal(err)
	}
	hook, err := channel.NewWebhook(base+"/webhook", secret)
	if err != nil {
		t.Fatal(err)
	}
	ask := func(id string) error {
		_, err := hook.Await(context.Background(), approver.Request{
			ID: id, Tool: "drop_table", Summary: "drop table " + id, Principal: "ci", Audience: "db", ExpiresAt: time.Now().Add(time.Minute)}, time.Second)
		return err
	}
	for i := range 2 {
		if err := ask(fmt.Sprint("r", i)); !errors.Is(err, channel.ErrPending) {
			t.Fatalf("request %d of 2: %v, want pending", i, err)
		}
	}
	if err := ask("r2"); err == nil || errors.Is(err, channel.ErrPending) || !strings.Contains(err.Error(), "too many pending") {
		t.Fatalf("a third request with --max-pending 2: %v, want refused (too many pending)", err)
	}
}
