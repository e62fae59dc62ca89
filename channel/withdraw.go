package channel

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/mcpsafe/mcpsafe/approver"
)

// WireWithdrawal is the JSON body a Webhook POSTs, to the same URL and
// signed the same way as a request, when the gate takes a request back:
// its caller cancelled or disconnected, or the gate stopped waiting. The
// "type" member keeps the two bodies apart: a request never has one, and a
// withdrawal must say "withdraw". Audience and args_digest must match the
// request, so a withdrawal names exactly one request.
type WireWithdrawal struct {
	Version    int    `json:"version"`
	Type       string `json:"type"` // always "withdraw"
	ID         string `json:"id"`
	Audience   string `json:"audience"`
	ArgsDigest string `json:"args_digest"`
	Reason     string `json:"reason"` // caller_gone, timed_out or shutting_down
	Nonce      string `json:"nonce"`  // fresh for every POST, like a request's
}

// pendingGrace is how much longer than its Prefer wait a webhook call
// waits for the 202 before it counts the request as pending itself.
const pendingGrace = 10 * time.Second

// preferWait returns the Prefer header asking the service to answer
// within wait, and whether the wait ends before deadline (otherwise there
// is nothing to ask for: the request ends first).
func preferWait(now time.Time, wait time.Duration, deadline time.Time) (string, bool) {
	if wait <= 0 || !now.Add(wait).Before(deadline) {
		return "", false
	}
	secs := int64((wait + time.Second - 1) / time.Second) // round up: never answer before the wait
	return "wait=" + strconv.FormatInt(secs, 10), true
}

// Withdraw tells the service that nobody will pick r's decision up, so
// that it stops offering r to approvers. reason is approver.WithdrawCallerGone,
// approver.WithdrawTimedOut or approver.WithdrawShuttingDown.
func (w *Webhook) Withdraw(ctx context.Context, r approver.Request, reason string) error {
	if r.ID == "" {
		return fmt.Errorf("%w: request id is required", ErrRequest)
	}
	if w.takeRefused(r.ID) {
		// The service refused the request itself (wrong secret, wrong
		// URL, ...): it never opened, so there is nothing to take back,
		// and that error has been reported already.
		return nil
	}
	resp, err := w.postSigned(ctx, WireWithdrawal{
		Version: 1, Type: "withdraw", ID: r.ID, Audience: r.Audience, ArgsDigest: r.ArgsDigest,
		Reason: reason, Nonce: newNonce(),
	})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return statusError(resp, "withdrawal")
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponseBytes))
	return nil
}
