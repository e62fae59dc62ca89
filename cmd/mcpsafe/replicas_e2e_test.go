package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// needService fails under CI and skips loudly elsewhere when addr does not
// answer: CI must never pass by skipping.
func needService(t *testing.T, name, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not reachable at %s under CI=true (scripts/services starts it): %v", name, addr, err)
	}
	t.Skipf("SKIPPED: %s is not reachable at %s (run scripts/services): %v", name, addr, err)
}

// replica is one `mcpsafe files --http` process.
type replica struct {
	url string
	cmd *exec.Cmd
}

var servingRE = regexp.MustCompile(`serving MCP on (http://\S+/mcp)`)

func startReplica(t *testing.T, args ...string) *replica {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"files", "--http", "127.0.0.1:0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &replica{cmd: cmd}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	found := make(chan string, 1)
	var log strings.Builder
	var logMu sync.Mutex
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logMu.Lock()
			log.WriteString(sc.Text() + "\n")
			logMu.Unlock()
			if m := servingRE.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case r.url = <-found:
	case <-time.After(20 * time.Second):
		logMu.Lock()
		defer logMu.Unlock()
		t.Fatalf("replica did not start: %s", log.String())
	}
	return r
}

func (r *replica) connect(t *testing.T) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "replica-client", Version: "1"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: r.url, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", r.url, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func countDecisions(t *testing.T, path, decision string) (int, map[string]int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, calls := 0, map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r struct{ Decision, Call string }
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("journal line %q: %v", line, err)
		}
		if r.Decision == decision {
			n++
			calls[r.Call]++
		}
	}
	return n, calls
}

// Two replicas share a key and a ledger; 64 clients race to redeem the same
// 1,000 tokens, each presented four times (twice at each replica). Exactly
// 1,000 redemptions may happen, none twice.
func TestReplicasDoubleSpend(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two servers and makes 5,000 calls")
	}
	stamp := fmt.Sprintf("t%d", time.Now().UnixNano())
	for _, b := range []struct{ name, addr, url string }{
		{"redis", "127.0.0.1:6379", "redis://127.0.0.1:6379/0?ledger_prefix=mcpsafe-e2e-" + stamp + ":"},
		{"postgres", "127.0.0.1:5432", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable&ledger_table=e2e_" + stamp},
	} {
		t.Run(b.name, func(t *testing.T) {
			needService(t, b.name, b.addr)
			if b.name == "postgres" {
				t.Cleanup(func() { dropTable(t, "e2e_"+stamp) })
			}
			const tokens, workers = 1000, 64
			base := t.TempDir()
			root := filepath.Join(base, "root")
			must(t, os.Mkdir(root, 0o755))
			for i := range tokens {
				must(t, os.WriteFile(filepath.Join(root, fmt.Sprintf("f%04d.txt", i)), []byte(fmt.Sprint(i)), 0o644))
			}
			key := filepath.Join(base, "key")
			if out, err := exec.Command(binary, "keygen", key).CombinedOutput(); err != nil {
				t.Fatalf("keygen: %v %s", err, out)
			}
			common := []string{"--root", root, "--key-file", key, "--ledger", b.url, "--allow-token-for", "delete_file", "--ttl", "10m", "--max-pending-per-principal", "2000"}
			ja, jb := filepath.Join(base, "a.jsonl"), filepath.Join(base, "b.jsonl")
			reps := []*replica{
				startReplica(t, append(common, "--journal", ja)...),
				startReplica(t, append(common, "--journal", jb)...),
			}
			sessions := make([]*mcp.ClientSession, workers)
			for i := range sessions {
				sessions[i] = reps[i%2].connect(t)
			}

			// Issue the tokens, spread over both replicas.
			toks := make([]string, tokens)
			var wg sync.WaitGroup
			var issueErr atomic.Value
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < tokens; i += workers {
						res, err := sessions[w].CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": fmt.Sprintf("f%04d.txt", i)}})
						if err != nil {
							issueErr.Store(err)
							return
						}
						var sc struct {
							ApprovalToken string `json:"approval_token"`
						}
						b, _ := json.Marshal(res.StructuredContent)
						json.Unmarshal(b, &sc)
						toks[i] = sc.ApprovalToken
					}
				}()
			}
			wg.Wait()
			if err := issueErr.Load(); err != nil {
				t.Fatalf("issuing: %v", err)
			}

			// Each token four times: twice at each replica, shuffled.
			type job struct{ i, replica int }
			var jobs []job
			for i := range tokens {
				jobs = append(jobs, job{i, 0}, job{i, 0}, job{i, 1}, job{i, 1})
			}
			rand.Shuffle(len(jobs), func(a, b int) { jobs[a], jobs[b] = jobs[b], jobs[a] })
			queues := [2]chan job{make(chan job, len(jobs)), make(chan job, len(jobs))}
			for _, j := range jobs {
				queues[j.replica] <- j
			}
			close(queues[0])
			close(queues[1])
			var ok atomic.Int64
			reasons := sync.Map{}
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := range queues[w%2] {
						res, err := sessions[w].CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_file",
							Arguments: map[string]any{"path": fmt.Sprintf("f%04d.txt", j.i), "approval_token": toks[j.i]}})
						if err != nil {
							reasons.Store("protocol error: "+err.Error(), true)
							continue
						}
						if !res.IsError {
							ok.Add(1)
							continue
						}
						var sc struct{ Reason string }
						b, _ := json.Marshal(res.StructuredContent)
						json.Unmarshal(b, &sc)
						reasons.Store(sc.Reason, true)
					}
				}()
			}
			wg.Wait()
			reasons.Range(func(k, _ any) bool {
				// A loser either finds the token spent, or (when the winner
				// already deleted the file) the target gone.
				if k != "token_spent" && k != "target_changed" {
					t.Errorf("unexpected refusal reason %q", k)
				}
				return true
			})
			if ok.Load() != tokens {
				t.Fatalf("%d successful redemptions, want exactly %d", ok.Load(), tokens)
			}
			na, ca := countDecisions(t, ja, "token-redeemed")
			nb, cb := countDecisions(t, jb, "token-redeemed")
			if na+nb != tokens {
				t.Fatalf("journals record %d+%d redemptions, want %d", na, nb, tokens)
			}
			for c := range ca {
				if ca[c]+cb[c] != 1 {
					t.Fatalf("grant %s redeemed %d times", c, ca[c]+cb[c])
				}
			}
			left, _ := os.ReadDir(root)
			if len(left) != 0 {
				t.Fatalf("%d files left", len(left))
			}
			t.Logf("%s: %d tokens, %d attempts, %d executions (replica a %d, b %d), 0 double", b.name, tokens, len(jobs), ok.Load(), na, nb)
		})
	}
}

// dropTable removes the ledger table a test created.
func dropTable(t *testing.T, table string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, "postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	if err != nil {
		t.Logf("cleanup: %v", err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{table}.Sanitize()); err != nil {
		t.Logf("cleanup: %v", err)
	}
}

// freePort returns a loopback port nobody listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// A private Redis dies under a running replica: every call is refused and
// nothing runs; when it comes back, service resumes.
func TestLedgerOutage(t *testing.T) {
	redisBin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server not installed under CI=true (scripts/services installs it)")
		}
		t.Skip("SKIPPED: redis-server is not installed (run scripts/services)")
	}
	port := freePort(t)
	startRedis := func() *exec.Cmd {
		cmd := exec.Command(redisBin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
		log := &lockedBuffer{}
		cmd.Stdout = log
		must(t, cmd.Start())
		// Its readiness line, printed once it listens.
		waitFor(t, "private redis ready", func() bool { return strings.Contains(log.String(), "Ready to accept connections") },
			func() string { return "it said:\n" + log.String() })
		return cmd
	}
	redis := startRedis()
	defer func() { redis.Process.Kill(); redis.Wait() }()

	w := newWorkspace(t)
	key := filepath.Join(w.base, "key")
	if out, err := exec.Command(binary, "keygen", key).CombinedOutput(); err != nil {
		t.Fatalf("keygen: %v %s", err, out)
	}
	rep := startReplica(t, "--root", w.root, "--journal", w.journal, "--key-file", key,
		"--ledger", fmt.Sprintf("redis://127.0.0.1:%d/0", port))
	cs := rep.connect(t)
	args := map[string]any{"source": "cache.txt", "destination": "moved.txt"}
	tok := tokenOf(t, call(t, cs, "move_file", args))

	redis.Process.Kill()
	redis.Wait()
	withTok := map[string]any{"source": "cache.txt", "destination": "moved.txt", "approval_token": tok}
	res := call(t, cs, "move_file", withTok)
	if got := reasonOf(t, res); got != "ledger_unavailable" {
		t.Fatalf("redeem with redis down: %q %v", got, res.Content)
	}
	if got := reasonOf(t, call(t, cs, "move_file", args)); got != "ledger_unavailable" {
		t.Fatalf("issue with redis down: %q", got)
	}
	if content(t, w.path("cache.txt")) != "cache" || content(t, w.path("moved.txt")) != "<missing>" {
		t.Fatal("a call ran while the ledger was down")
	}

	redis = startRedis() // empty: the old grant is gone with it, so it stays unusable
	if got := reasonOf(t, call(t, cs, "move_file", withTok)); got != "token_spent" {
		t.Fatalf("old token after a ledger restart: %q", got)
	}
	tok = tokenOf(t, call(t, cs, "move_file", args))
	withTok["approval_token"] = tok
	if res := call(t, cs, "move_file", withTok); res.IsError {
		t.Fatalf("service did not resume: %v", res.Content)
	}
	if content(t, w.path("moved.txt")) != "cache" {
		t.Fatal("the resumed call did not move the file")
	}
}
