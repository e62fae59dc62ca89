package mcpsafe_test

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/grants/celscope"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool whose grant policy derives scopes (CEL) cannot be registered on a
// gate that has no CEL evaluator: the error names the option and the
// package that provides it. Control: with celscope.New() it registers.
func TestGrantScopesNeedTheCELEvaluator(t *testing.T) {
	for _, withCEL := range []bool{false, true} {
		opts := mcpsafe.Options{Audience: "notes", Journal: journal.Discard}
		if withCEL {
			opts.GrantCEL = celscope.New()
		}
		g, err := mcpsafe.New(opts)
		if err != nil {
			t.Fatal(err)
		}
		server := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
		err = g.Register(server, newNotes().writeTool(grantPolicy()))
		switch {
		case withCEL && err != nil:
			t.Errorf("with the evaluator: %v", err)
		case !withCEL && (err == nil || !strings.Contains(err.Error(), "Options.GrantCEL") || !strings.Contains(err.Error(), "grants/celscope")):
			t.Errorf("without the evaluator: err = %v, want one naming Options.GrantCEL and grants/celscope", err)
		}
	}
}

// Without a CEL evaluator the gate still offers and honours the scope it
// always offers, "exactly these arguments", evaluated by itself: the same
// call runs under the grant, a different one is asked again (and
// declined here).
func TestExactArgumentsGrantWithoutCEL(t *testing.T) {
	p := &mcpsafe.GrantPolicy{MaxTTL: time.Hour, MaxUses: 3, ClientRelayed: true}
	e := newGrantEnv(t, p, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) { o.GrantCEL = nil })
	cs, a := e.grantFirst("alice", "grant-1-1")
	if m, _ := a.msg.Load().(string); !strings.Contains(m, "exactly these arguments") {
		t.Fatalf("the prompt does not offer the exact-arguments grant: %s", m)
	}
	wantExecuted(t, e.write(cs, "tmp/a.txt")) // the same call: under the grant
	if a.asked.Load() != 1 || e.writes.executions() != 2 {
		t.Fatalf("asked %d, executed %d; want 1, 2", a.asked.Load(), e.writes.executions())
	}
	wantRefused(t, e.write(cs, "tmp/b.txt"), mcpsafe.ReasonDeclined) // another call: asked
	if a.asked.Load() != 2 || e.writes.executions() != 2 {
		t.Fatalf("another call: asked %d, executed %d; want 2, 2", a.asked.Load(), e.writes.executions())
	}
}

// The root package links neither cel-go (with protobuf) nor OpenTelemetry:
// a program that offers no derived grant scopes and does not trace does
// not carry them (issue 22; grants/celscope and tracing/oteltracing do).
func TestRootLinksNoCELNorOTel(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "cel.dev/") || strings.HasPrefix(dep, "google.golang.org/protobuf") || strings.HasPrefix(dep, "go.opentelemetry.io/") {
			t.Errorf("the root package links %s", dep)
		}
	}
	if !strings.Contains(string(out), "github.com/modelcontextprotocol/go-sdk/mcp") {
		t.Fatalf("go list -deps does not list the SDK: the check reads nothing\n%s", out)
	}
}
