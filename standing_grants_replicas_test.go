package mcpsafe_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/grants/celscope"
	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/mcpsafe/mcpsafe/ledger/postgres"
	_ "github.com/mcpsafe/mcpsafe/ledger/redis"  // redis:// for this package's tests
	_ "github.com/mcpsafe/mcpsafe/ledger/sqlite" // file: for this package's tests
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"
)

// needService skips outside CI and fails in CI, where the services must run.
func needService(t *testing.T, what string, err error) {
	t.Helper()
	msg := fmt.Sprintf("%s is not reachable (%v); run scripts/services", what, err)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip("SKIPPED (not CI): " + msg)
}

func uniqueName() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// sharedLedgerURL returns a ledger URL on the real service with a key prefix
// or table of this test's own, removed when it ends.
func sharedLedgerURL(t *testing.T, kind string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	switch kind {
	case "redis":
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
		if err := c.Ping(ctx).Err(); err != nil {
			c.Close()
			needService(t, "Redis", err)
		}
		prefix := "mcpsafe:test-grants:" + uniqueName() + ":"
		t.Cleanup(func() {
			keys, _ := c.Keys(context.Background(), prefix+"*").Result()
			if len(keys) > 0 {
				c.Del(context.Background(), keys...)
			}
			c.Close()
		})
		return "redis://127.0.0.1:6379/0?ledger_prefix=" + prefix
	default:
		const dsn = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			needService(t, "PostgreSQL", err)
		}
		table := "grants_test_" + uniqueName()
		t.Cleanup(func() {
			conn.Exec(context.Background(), `DROP TABLE IF EXISTS `+table+`, `+postgres.StandingTable(table)+`, `+postgres.OutcomesTable(table))
			conn.Close(context.Background())
		})
		return dsn + "&ledger_table=" + table
	}
}

// K uses of one grant, raced by many clients over two gate replicas that
// share a real Redis or PostgreSQL ledger, execute exactly K times; every
// other call asks (and is declined).
func TestStandingGrantRaceAcrossReplicas(t *testing.T) {
	for _, kind := range []string{"redis", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			url := sharedLedgerURL(t, kind)
			keys, err := mcpsafe.NewKeys(bytesOf(7, 32))
			if err != nil {
				t.Fatal(err)
			}
			const k = 5 // uses in all, the approving call included
			p := &mcpsafe.GrantPolicy{MaxTTL: time.Hour, MaxUses: k, ClientRelayed: true, Scopes: dirScope}
			writes := newNotes()
			var replicas []*env
			for i := 0; i < 2; i++ {
				store, err := ledger.Open(context.Background(), url)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { store.Close() })
				replicas = append(replicas, newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
					o.Ledger, o.Keys = store, keys
					o.GrantCEL = celscope.New()
					o.Principal = func(req *mcp.CallToolRequest) string {
						return "client:" + req.Session.InitializeParams().ClientInfo.Name
					}
					*tools = append(*tools, writes.writeTool(p))
				}))
			}
			// The approval, on replica 0: paths under tmp/, 1 hour, 5 uses.
			first := &asker{choice: "grant-2-2"}
			cs := replicas[0].connect(client{name: "alice", elicit: first.elicit})
			wantExecuted(t, callTool(t, cs, "write_note", map[string]any{"path": "tmp/0", "text": "x"}))

			const clients, each = 8, 5
			var asked atomic.Int32
			decline := func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked.Add(1)
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			var wg sync.WaitGroup
			start := make(chan struct{})
			for c := 0; c < clients; c++ {
				s := replicas[c%2].connect(client{name: "alice", elicit: decline})
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					for i := 0; i < each; i++ {
						_, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "write_note",
							Arguments: map[string]any{"path": fmt.Sprintf("tmp/%d-%d", c, i), "text": "x"}})
						if err != nil {
							t.Error(err)
						}
					}
				}()
			}
			close(start)
			wg.Wait()
			if got := writes.executions(); got != k {
				t.Fatalf("executed %d times, want exactly %d", got, k)
			}
			if got := asked.Load(); got != clients*each-(k-1) {
				t.Fatalf("asked %d times, want %d", got, clients*each-(k-1))
			}
		})
	}
}
