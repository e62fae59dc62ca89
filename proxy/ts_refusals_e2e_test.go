package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tsPackage is an npm package scripts/npm-deps installed, or a loud skip
// (a failure when CI=true).
func tsPackage(t *testing.T, name string) string {
	t.Helper()
	dir, err := filepath.Abs("../.cache/npm/node_modules/" + name)
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "package.json"))
	}
	if err == nil {
		_, err = exec.LookPath("node")
	}
	if err != nil {
		msg := "!!! node or " + name + " is not installed (run scripts/npm-deps): " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dir
}

// Under mode: elicit the proxy keeps server-filesystem's output schema on
// write_file, and the TypeScript clients validate structured content
// against it: 1.x even of an error result. Every refusal (declined,
// cancelled, denied by policy, timed out) must reach the model as a
// result it can read, with both generations of the SDK; the control, an
// approved call, returns the upstream's structured content, which the
// client validated against the advertised schema.
func TestTypeScriptClientsReadEveryRefusal(t *testing.T) {
	fsBin := fsServerBin(t)
	gens := map[string]string{"1": tsPackage(t, "@modelcontextprotocol/sdk"), "2": tsPackage(t, "@modelcontextprotocol/client")}
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	writeFile(t, policy, "mode: elicit\ntools:\n  write_file:\n    deny: ['args.path.endsWith(\"denied.txt\")']\n")
	for _, gen := range []string{"1", "2"} {
		for _, c := range []struct{ answer, file, reason string }{
			{"accept", "ok.txt", ""},
			{"decline", "a.txt", "declined"},
			{"cancel", "a.txt", "cancelled"},
			{"accept", "denied.txt", "policy_denied"},
			{"never", "a.txt", "timeout"},
		} {
			t.Run("ts"+gen+"/"+c.answer+"/"+c.file, func(t *testing.T) {
				dir, err := filepath.EvalSymlinks(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				target := filepath.Join(dir, c.file)
				proxyCmd, _ := json.Marshal([]string{os.Args[0], "-test.run=^$"})
				upstream, _ := json.Marshal([]string{fsBin, dir})
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				cmd := exec.CommandContext(ctx, "node", "testdata/ts-refusals.mjs")
				cmd.Env = append(os.Environ(), "SDK_DIR="+gens[gen], "GEN="+gen, "PROXY="+string(proxyCmd), "ANSWER="+c.answer, "TARGET="+target,
					serveEnv+"=1", "MCPSAFE_PROXY_TEST_POLICY="+policy, "MCPSAFE_PROXY_TEST_UPSTREAM="+string(upstream),
					"MCPSAFE_PROXY_TEST_JOURNAL="+filepath.Join(t.TempDir(), "j.jsonl"), "MCPSAFE_PROXY_TEST_ELICIT_TIMEOUT=1s")
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
					t.Fatalf("the client failed instead of reading the answer: %v\n%s", e["message"], stderr.String())
				}
				if steps["listed"]["outputSchema"] == nil {
					t.Fatalf("write_file advertises no output schema under mode: elicit, so nothing was validated:\n%s", out)
				}
				res, _ := steps["result"]["result"].(map[string]any)
				_, written := os.Stat(target)
				if c.reason == "" {
					sc, _ := res["structuredContent"].(map[string]any)
					if res["isError"] == true || sc == nil || !strings.Contains(sc["content"].(string), "Successfully wrote") || written != nil {
						t.Fatalf("the approved call: %v (file: %v)", res, written)
					}
					return
				}
				content, _ := res["content"].([]any)
				first, _ := content[0].(map[string]any)
				if res["isError"] != true || !strings.HasPrefix(first["text"].(string), "Refused ("+c.reason+")") {
					t.Fatalf("want a refusal the model reads, %s: %v", c.reason, res)
				}
				if written == nil {
					t.Fatal("refused, but the file was written")
				}
			})
		}
	}
}
