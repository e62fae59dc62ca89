package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/proxy/policy"
)

// The proxy driven by the real TypeScript SDK client, in front of the real
// npm filesystem server. The test binary itself serves as the proxy
// process (see serveEnv in TestMain).
const serveEnv = "MCPSAFE_PROXY_TEST_SERVE"

func TestTypeScriptClient(t *testing.T) {
	fsBin := fsServerBin(t)
	sdk, err := filepath.Abs("../.cache/npm/node_modules/@modelcontextprotocol/sdk")
	if err == nil {
		_, err = os.Stat(filepath.Join(sdk, "package.json"))
	}
	if err != nil {
		msg := "!!! @modelcontextprotocol/sdk is not installed (run scripts/npm-deps): " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	writeFile(t, policy, "tools:\n  write_file:\n    irreversible: false\n    preview: 'Write {{.path}}'\n")
	for _, c := range []struct {
		scenario string
		written  bool
		check    func(steps map[string]map[string]any) string
	}{
		{"token", true, func(steps map[string]map[string]any) string {
			first := steps["first"]["result"].(map[string]any)
			if first["structuredContent"].(map[string]any)["status"] != "approval_required" {
				return "first call did not ask for approval"
			}
			if steps["second"]["result"].(map[string]any)["isError"] == true {
				return "token redeem failed"
			}
			return ""
		}},
		{"accept", true, func(steps map[string]map[string]any) string {
			if steps["first"]["result"].(map[string]any)["isError"] == true {
				return "accepted call failed"
			}
			return ""
		}},
		{"decline", false, func(steps map[string]map[string]any) string {
			sc, _ := steps["first"]["result"].(map[string]any)["structuredContent"].(map[string]any)
			if sc["reason"] != "declined" {
				return "declined call was not refused as declined"
			}
			return ""
		}},
	} {
		t.Run(c.scenario, func(t *testing.T) {
			dir, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(dir, "ts.txt")
			proxyCmd, _ := json.Marshal([]string{os.Args[0], "-test.run=^$"})
			upstream, _ := json.Marshal([]string{fsBin, dir})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "node", "testdata/ts-client.mjs")
			cmd.Env = append(os.Environ(), "SDK_DIR="+sdk, "PROXY="+string(proxyCmd), "SCENARIO="+c.scenario, "TARGET="+target,
				serveEnv+"=1", "MCPSAFE_PROXY_TEST_POLICY="+policy, "MCPSAFE_PROXY_TEST_UPSTREAM="+string(upstream),
				"MCPSAFE_PROXY_TEST_JOURNAL="+filepath.Join(t.TempDir(), "j.jsonl"))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("node: %v\n%s\n%s", err, out, stderr.String())
			}
			steps := map[string]map[string]any{}
			sc := bufio.NewScanner(bytes.NewReader(out))
			for sc.Scan() {
				var m map[string]any
				if json.Unmarshal(sc.Bytes(), &m) == nil {
					steps[m["step"].(string)] = m
				}
			}
			if e, ok := steps["error"]; ok {
				t.Fatalf("the TypeScript client failed: %v\n%s", e["message"], out)
			}
			if msg := c.check(steps); msg != "" {
				t.Fatalf("%s:\n%s", msg, out)
			}
			_, err = os.Stat(target)
			if c.written != (err == nil) {
				t.Fatalf("file written=%v, want %v", err == nil, c.written)
			}
			if c.written && readFile(t, target) != "from ts" {
				t.Fatalf("file holds %q", readFile(t, target))
			}
		})
	}
}

// serveProxy runs a proxy over stdio for TestTypeScriptClient.
func serveProxy() int {
	pol, err := policy.Load(os.Getenv("MCPSAFE_PROXY_TEST_POLICY"))
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	var up []string
	if err := json.Unmarshal([]byte(os.Getenv("MCPSAFE_PROXY_TEST_UPSTREAM")), &up); err != nil || len(up) == 0 {
		os.Stderr.WriteString("MCPSAFE_PROXY_TEST_UPSTREAM: want a JSON array\n")
		return 2
	}
	// As `mcpsafe proxy -- CMD` runs it: the upstream on a pipe the fast
	// lane shares.
	pipe, err := StartUpstream(exec.Command(up[0], up[1:]...))
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	gc := serverconfFor(os.Getenv("MCPSAFE_PROXY_TEST_JOURNAL"))
	if d, err := time.ParseDuration(os.Getenv("MCPSAFE_PROXY_TEST_ELICIT_TIMEOUT")); err == nil {
		gc.ElicitTimeout = d
	}
	s, err := NewServer(context.Background(), Config{
		Upstream: pipe,
		Policy:   pol,
		Gate:     stores(nil, gc),
	})
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	defer s.Close()
	if err := s.ServeStdio(context.Background(), os.Stdin, os.Stdout); err != nil {
		return 1
	}
	return 0
}
