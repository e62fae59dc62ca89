//go:build linux

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpsafe/mcpsafe/approvals"
)

// approverToken is the one approver's API token (its password).
const approverToken = "chaos-approver-token-0123456789"

// system is everything the run started.
type system struct {
	c         config
	dir, root string
	approvals []*proc
	apiURLs   []string // each approval replica, direct
	lb        *balancer
	gates     []*proc
	gateURLs  []string
	journals  []string
	redis     *proc
	redisAddr string
	pgDB      string // the run's database, dropped at the end
	diskDir   string // the small file system under the last gate's journal
	cleanup   []func()
}

func (s *system) close() {
	for i := len(s.cleanup) - 1; i >= 0; i-- {
		s.cleanup[i]()
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// build compiles the mcpsafe binary unless one was given.
func build(c *config, dir string) error {
	if c.bin != "" {
		return nil
	}
	c.bin = filepath.Join(dir, "mcpsafe")
	cmd := exec.Command("go", "build", "-o", c.bin, "github.com/mcpsafe/mcpsafe/cmd/mcpsafe")
	cmd.Stderr = os.Stderr
	return cmd.Run()
}

func startSystem(ctx context.Context, c config) (_ *system, err error) {
	s := &system{c: c}
	if c.dir == "" {
		if s.dir, err = os.MkdirTemp("", "mcpsafe-chaos-"); err != nil {
			return nil, err
		}
		s.cleanup = append(s.cleanup, func() { os.RemoveAll(s.dir) })
	} else {
		s.dir = c.dir
		if err := os.MkdirAll(s.dir, 0o700); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if err := build(&s.c, s.dir); err != nil {
		return nil, fmt.Errorf("building mcpsafe: %w", err)
	}
	s.root = filepath.Join(s.dir, "root")
	if err := os.MkdirAll(s.root, 0o755); err != nil {
		return nil, err
	}

	// Shared secrets: the gates' key file, the webhook secret, one approver.
	key := filepath.Join(s.dir, "key")
	if out, err := exec.Command(s.c.bin, "keygen", key).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("keygen: %v %s", err, out)
	}
	secret := filepath.Join(s.dir, "webhook-secret")
	raw := make([]byte, 32)
	rand.Read(raw)
	if err := os.WriteFile(secret, []byte(base64.StdEncoding.EncodeToString(raw)+"\n"), 0o600); err != nil {
		return nil, err
	}
	approvers := filepath.Join(s.dir, "approvers")
	if err := approvals.SetPassword(approvers, "alice", approverToken); err != nil {
		return nil, err
	}

	// The approval service's store.
	store := "file:" + filepath.Join(s.dir, "approvals.db")
	switch c.store {
	case "postgres":
		if store, err = s.createDatabase(ctx); err != nil {
			return nil, err
		}
	case "file":
		if c.approvals != 1 {
			return nil, fmt.Errorf("-store file takes -approvals 1: replicas need PostgreSQL")
		}
	default:
		return nil, fmt.Errorf("-store %q: want postgres or file", c.store)
	}
	for i := range c.approvals {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		p := &proc{
			name: fmt.Sprintf("approvals-%d", i), log: filepath.Join(s.dir, fmt.Sprintf("approvals-%d.log", i)),
			argv: []string{s.c.bin, "approvals", "serve", "--listen", fmt.Sprintf("127.0.0.1:%d", port),
				"--secret-file", secret, "--approvers-file", approvers, "--store", store, "--max-pending", "100000"},
			ready: func(ctx context.Context) error { return waitAPI(ctx, base) },
		}
		if err := p.start(ctx); err != nil {
			return nil, err
		}
		s.cleanup = append(s.cleanup, p.stop)
		s.approvals = append(s.approvals, p)
		s.apiURLs = append(s.apiURLs, base)
	}
	if s.lb, err = newBalancer(s.apiURLs); err != nil {
		return nil, err
	}
	s.cleanup = append(s.cleanup, s.lb.close)

	// Redis for the gates' ledger: its own server, durable (append-only,
	// fsync'd), so that a restart keeps the grants.
	rport, err := freePort()
	if err != nil {
		return nil, err
	}
	s.redisAddr = fmt.Sprintf("127.0.0.1:%d", rport)
	rdir := filepath.Join(s.dir, "redis")
	os.MkdirAll(rdir, 0o700)
	s.redis = &proc{
		name: "redis", log: filepath.Join(s.dir, "redis.log"),
		argv: []string{"redis-server", "--port", fmt.Sprint(rport), "--bind", "127.0.0.1", "--save", "",
			"--appendonly", "yes", "--appendfsync", "always", "--dir", rdir},
		ready: func(ctx context.Context) error { return waitTCP(ctx, s.redisAddr) },
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, fmt.Errorf("redis-server is not installed (scripts/services installs it): %w", err)
	}
	if err := s.redis.start(ctx); err != nil {
		return nil, err
	}
	s.cleanup = append(s.cleanup, s.redis.kill)

	// The gates. The last one keeps its journal on a small file system of
	// its own, which the run fills.
	for i := range c.gates {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		jdir := filepath.Join(s.dir, fmt.Sprintf("gate-%d", i))
		if i == c.gates-1 && c.faults {
			unmount, err := tmpfs(jdir, "4m")
			if err != nil {
				return nil, err
			}
			s.cleanup = append(s.cleanup, unmount)
			s.diskDir = jdir
		} else if err := os.MkdirAll(jdir, 0o700); err != nil {
			return nil, err
		}
		journal := filepath.Join(jdir, "journal.jsonl")
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		p := &proc{
			name: fmt.Sprintf("gate-%d", i), log: filepath.Join(s.dir, fmt.Sprintf("gate-%d.log", i)),
			argv: []string{s.c.bin, "files", "--http", addr, "--root", s.root, "--journal", journal,
				"--key-file", key, "--ledger", "redis://" + s.redisAddr + "/0", "--audience", "chaos-files",
				"--mode", "channel", "--approver-url", s.lb.addr + "/webhook", "--approver-secret-file", secret,
				"--channel-wait", "1s", "--ttl", "10m", "--max-pending", "100000", "--max-pending-per-principal", "100000",
				"--shutdown-grace", "2s"},
			ready: func(ctx context.Context) error { return waitTCP(ctx, addr) },
		}
		if err := p.start(ctx); err != nil {
			return nil, err
		}
		s.cleanup = append(s.cleanup, p.stop)
		s.gates = append(s.gates, p)
		s.gateURLs = append(s.gateURLs, "http://"+addr+"/mcp")
		s.journals = append(s.journals, journal)
	}
	return s, nil
}

// createDatabase makes the run's own database and drops it at the end.
func (s *system) createDatabase(ctx context.Context) (string, error) {
	conn, err := pgx.Connect(ctx, s.c.pgURL)
	if err != nil {
		return "", fmt.Errorf("PostgreSQL at %s (scripts/services starts it): %w", s.c.pgURL, err)
	}
	db := "mcpsafe_chaos_" + randHex(6)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		conn.Close(ctx)
		return "", err
	}
	s.pgDB = db
	s.cleanup = append(s.cleanup, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn.Exec(ctx, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
		conn.Close(ctx)
	})
	u, err := url.Parse(s.c.pgURL)
	if err != nil {
		return "", err
	}
	u.Path = "/" + db
	q := u.Query()
	q.Set("application_name", "mcpsafe-chaos")
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// terminateConnections ends every connection of the run's database
// (pg_terminate_backend), as a failover does.
func (s *system) terminateConnections(ctx context.Context) (int, error) {
	if s.pgDB == "" {
		return 0, nil
	}
	conn, err := pgx.Connect(ctx, s.c.pgURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, s.pgDB).Scan(&n)
	return n, err
}

// waitAPI polls the service's API until it answers an approver.
func waitAPI(ctx context.Context, base string) error {
	for {
		code, _, err := api(ctx, "GET", base+"/api/requests")
		if err == nil && code == http.StatusOK {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %v (last: %d %v)", base, ctx.Err(), code, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

var apiClient = &http.Client{Timeout: 10 * time.Second}

func api(ctx context.Context, method, u string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+approverToken)
	resp, err := apiClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.Bytes(), nil
}

// journalVerify runs `mcpsafe journal verify` on path.
func (s *system) journalVerify(path string) error {
	out, err := exec.Command(s.c.bin, "journal", "verify", path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("journal verify %s: %v: %s", path, err, strings.TrimSpace(string(out)))
	}
	return nil
}
