package mcpsafe_test

import (
	"testing"
	"time"
)

// The pending gauge counts approvals still open: one that expired stops
// counting when it expires, though no later call swept it (the gauge read
// 1,790 on a server with none open, so USAGE's alert fired on a healthy
// server); control: open ones count, and a redeemed one stops counting.
func TestPendingGaugeCountsOnlyLiveApprovals(t *testing.T) {
	e := newEnv(t, nil)
	start := time.Now().Truncate(time.Millisecond)
	e.clock.Set(start)
	cs := e.connect(client{})
	args := func(to string) map[string]any { return map[string]any{"from": "todo.txt", "to": to} }
	tok := token(t, callTool(t, cs, "rename_note", args("a")))
	token(t, callTool(t, cs, "rename_note", args("b")))
	token(t, callTool(t, cs, "rename_note", args("c")))
	if n := e.gate.Pending(); n != 3 {
		t.Fatalf("Pending() = %d with three open approvals, want 3", n)
	}
	a := args("a")
	a["approval_token"] = tok
	wantExecuted(t, callTool(t, cs, "rename_note", a))
	if n := e.gate.Pending(); n != 2 {
		t.Fatalf("Pending() = %d after one was redeemed, want 2", n)
	}
	e.clock.Set(start.Add(5*time.Minute - time.Millisecond))
	if n := e.gate.Pending(); n != 2 {
		t.Fatalf("Pending() = %d just before expiry, want 2", n)
	}
	e.clock.Set(start.Add(5 * time.Minute))
	if n := e.gate.Pending(); n != 0 {
		t.Fatalf("Pending() = %d once every approval expired, want 0", n)
	}
}
