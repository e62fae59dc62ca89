package mcpsafe_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// approverFunc adapts a function to approver.Approver. The real webhook and
// approval service are tested in channel/; here the gate's handling of
// every kind of answer is.
type approverFunc func(context.Context, approver.Request) (approver.Decision, error)

func (f approverFunc) Approve(ctx context.Context, r approver.Request) (approver.Decision, error) {
	return f(ctx, r)
}

// An approverFunc can neither keep a request open nor take it back.
func (approverFunc) Awaiter() approver.Awaiter       { return nil }
func (approverFunc) Withdrawer() approver.Withdrawer { return nil }

func TestChannelMode(t *testing.T) {
	cases := []struct {
		name   string
		answer func() (approver.Decision, error)
		min    mcpsafe.Assurance
		reason string // "" = executed
	}{
		{"approved by a named approver", func() (approver.Decision, error) {
			return approver.Decision{Approved: true, Approvers: []string{"alice"}}, nil
		}, mcpsafe.AssuranceChannel, ""},
		{"denied", func() (approver.Decision, error) {
			return approver.Decision{}, fmt.Errorf("webhook: %w", approver.ErrDenied)
		}, 0, mcpsafe.ReasonChannelDenied},
		{"not approved without an error", func() (approver.Decision, error) {
			return approver.Decision{Approvers: []string{"alice"}}, nil
		}, 0, mcpsafe.ReasonChannelDenied},
		{"no decision in time", func() (approver.Decision, error) {
			return approver.Decision{}, fmt.Errorf("webhook: %w", approver.ErrNoDecision)
		}, 0, mcpsafe.ReasonTimeout},
		{"approved but the channel also failed", func() (approver.Decision, error) {
			return approver.Decision{Approved: true, Approvers: []string{"alice"}}, errors.New("connection reset")
		}, 0, mcpsafe.ReasonChannelUnavailable},
		{"panic", func() (approver.Decision, error) { panic("boom") }, 0, mcpsafe.ReasonChannelUnavailable},
		{"approved anonymously where a named approver is required", func() (approver.Decision, error) {
			return approver.Decision{Approved: true}, nil
		}, mcpsafe.AssuranceChannel, mcpsafe.ReasonAssuranceTooLow},
		{"approved anonymously, client-relayed is enough (control)", func() (approver.Decision, error) {
			return approver.Decision{Approved: true}, nil
		}, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got approver.Request
			e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
				o.Mode = mcpsafe.ModeChannel
				o.Approver = approverFunc(func(_ context.Context, r approver.Request) (approver.Decision, error) {
					got = r
					return tc.answer()
				})
				(*tools)[0].MinAssurance = tc.min
			})
			var elicited atomic.Int32
			cs := e.connect(client{elicit: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				elicited.Add(1)
				return accept(ctx, r)
			}})
			res := callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"})
			if elicited.Load() != 0 {
				t.Fatal("channel mode asked the MCP client")
			}
			if got.Tool != "delete_note" || got.Summary != `Delete note "cache.txt"` || !got.Irreversible || got.ArgsDigest == "" || got.ID == "" || got.Principal != "stdio" {
				t.Fatalf("approval request %+v", got)
			}
			if tc.reason != "" {
				wantRefused(t, res, tc.reason)
				if !e.notes.has("cache.txt") {
					t.Fatal("not approved, but the tool ran")
				}
				return
			}
			wantExecuted(t, res)
			if e.notes.has("cache.txt") {
				t.Fatal("approved, but the tool did not run")
			}
			if !slices.Contains(e.journal.decisions(), journal.ChannelApproved) {
				t.Fatalf("journal %v", e.journal.decisions())
			}
		})
	}
}

// A tool that demands channel assurance cannot be registered with a path
// that could only ever produce a client-relayed approval.
func TestChannelAssuranceAtRegistration(t *testing.T) {
	g, err := mcpsafe.New(mcpsafe.Options{Audience: "a", Journal: journal.Discard})
	if err != nil {
		t.Fatal(err)
	}
	tool := newNotes().deleteTool()
	tool.MinAssurance = mcpsafe.AssuranceChannel
	err = g.Register(mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil), tool)
	if err == nil || !strings.Contains(err.Error(), "channel") {
		t.Fatalf("Register: %v", err)
	}
	if _, err := mcpsafe.New(mcpsafe.Options{Audience: "a", Journal: journal.Discard, Mode: mcpsafe.ModeChannel}); err == nil {
		t.Fatal("channel mode without an approver accepted")
	}
}

// Plan text in the approval request is sanitized: a newline or a bidi
// override in a summary cannot pose as structure on the approver's screen.
func TestChannelRequestSanitized(t *testing.T) {
	var got approver.Request
	e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
		o.Mode = mcpsafe.ModeChannel
		o.Approver = approverFunc(func(_ context.Context, r approver.Request) (approver.Decision, error) {
			got = r
			return approver.Decision{}, approver.ErrDenied
		})
		(*tools)[0].Preview = func(_ context.Context, c mcpsafe.Call, r mcpsafe.Resolved) (mcpsafe.Plan, error) {
			return mcpsafe.Plan{Summary: "Delete " + r["path"].(string) + "\nApproved by admin \u202etxt.exe", Details: []string{"ok line", "evil\u200bline"}}, nil
		}
	})
	callTool(t, e.connect(client{}), "delete_note", map[string]any{"path": "cache.txt"})
	for _, s := range append([]string{got.Summary}, got.Details...) {
		if strings.ContainsAny(s, "\n\u202e\u200b") {
			t.Fatalf("raw control or format character reached the approver: %q", s)
		}
	}
	if got.Details[0] != "ok line" {
		t.Fatalf("a plain line was altered: %q", got.Details[0])
	}
}
