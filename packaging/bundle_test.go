package packaging

import (
	"archive/zip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcpsafe/mcpsafe/approvalpage/pagetest"
	"github.com/mcpsafe/mcpsafe/internal/version"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serverConfig is a command line in an MCP bundle's manifest.
type serverConfig struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

// manifest is the part of an MCP bundle's manifest.json a host reads.
type manifest struct {
	ManifestVersion string `json:"manifest_version"`
	Name            string `json:"name"`
	Version         string `json:"version"`
	License         string `json:"license"`
	Server          struct {
		Type       string `json:"type"`
		EntryPoint string `json:"entry_point"`
		MCPConfig  struct {
			serverConfig
			PlatformOverrides map[string]serverConfig `json:"platform_overrides"`
		} `json:"mcp_config"`
	} `json:"server"`
	Tools []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"tools"`
	Compatibility struct {
		Platforms []string `json:"platforms"`
	} `json:"compatibility"`
	UserConfig map[string]struct {
		Type     string `json:"type"`
		Required bool   `json:"required"`
		Default  any    `json:"default"`
	} `json:"user_config"`
	Meta map[string]struct {
		ToolAnnotations map[string]map[string]any `json:"tool_annotations"`
	} `json:"_meta"`
}

func readManifest(t *testing.T, path string) manifest {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	var m manifest
	must(t, json.Unmarshal(b, &m))
	return m
}

// hostPlatform is Node's process.platform for this machine, which keys a
// manifest's platform_overrides.
func hostPlatform() string {
	if runtime.GOOS == "windows" {
		return "win32"
	}
	return runtime.GOOS
}

var variableRE = regexp.MustCompile(`\$\{([^}]+)\}`)
var loneUserConfigRE = regexp.MustCompile(`^\$\{(user_config\.[^}]+)\}$`)

// hostCommand is the command line (and added environment) a host runs for
// m unpacked at dir, as @anthropic-ai/mcpb's getMcpConfigForManifest
// builds it: the host platform's platform_overrides replace command, args
// and env; nothing is built when a required user_config value is missing;
// ${__dirname}, ${/}, ${pathSeparator} and ${user_config.KEY} (the
// manifest's defaults, then the user's values; booleans as "true" and
// "false") are replaced; an argument that is exactly one
// ${user_config.KEY} holding a list becomes its items; an unknown
// variable stays as written.
func hostCommand(t *testing.T, m manifest, dir, platform string, user map[string]any) (argv, env []string) {
	t.Helper()
	cfg := m.Server.MCPConfig.serverConfig
	if o, ok := m.Server.MCPConfig.PlatformOverrides[platform]; ok {
		cfg.Command = cmpOr(o.Command, cfg.Command)
		if o.Args != nil {
			cfg.Args = o.Args
		}
		if o.Env != nil {
			cfg.Env = o.Env
		}
	}
	merged := map[string]any{}
	for k, uc := range m.UserConfig {
		if uc.Default != nil {
			merged[k] = uc.Default
		}
		if uc.Required {
			if v, ok := user[k]; !ok || v == nil || v == "" {
				t.Fatalf("user_config.%s is required and not given: a host would not start the server", k)
			}
		}
	}
	for k, v := range user {
		merged[k] = v
	}
	sep := string(filepath.Separator)
	vars := map[string]string{"__dirname": dir, "/": sep, "pathSeparator": sep}
	lists := map[string][]string{}
	for k, v := range merged {
		switch v := v.(type) {
		case []string:
			lists["user_config."+k] = v
		case bool:
			vars["user_config."+k] = map[bool]string{true: "true", false: "false"}[v]
		case string:
			vars["user_config."+k] = v
		default:
			b, _ := json.Marshal(v)
			vars["user_config."+k] = string(b)
		}
	}
	replace := func(s string) string {
		return variableRE.ReplaceAllStringFunc(s, func(m string) string {
			if v, ok := vars[m[2:len(m)-1]]; ok {
				return v
			}
			return m
		})
	}
	argv = []string{replace(cfg.Command)}
	for _, a := range cfg.Args {
		if lone := loneUserConfigRE.FindStringSubmatch(a); lone != nil && lists[lone[1]] != nil {
			argv = append(argv, lists[lone[1]]...)
			continue
		}
		argv = append(argv, replace(a))
	}
	for k, v := range cfg.Env {
		env = append(env, k+"="+replace(v))
	}
	return argv, env
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// unzip extracts a bundle as a host does, keeping the file modes the
// zip records (the binary must stay executable).
func unzip(t *testing.T, path string) string {
	t.Helper()
	zr, err := zip.OpenReader(path)
	must(t, err)
	defer zr.Close()
	dir := t.TempDir()
	for _, f := range zr.File {
		if !filepath.IsLocal(f.Name) {
			t.Fatalf("the bundle holds a path outside itself: %q", f.Name)
		}
		dst := filepath.Join(dir, filepath.FromSlash(f.Name))
		must(t, os.MkdirAll(filepath.Dir(dst), 0o755))
		if strings.HasSuffix(f.Name, "/") {
			continue
		}
		rc, err := f.Open()
		must(t, err)
		mode := os.FileMode(f.ExternalAttrs>>16) & 0o777
		if mode == 0 {
			mode = 0o644
		}
		w, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, mode)
		must(t, err)
		_, err = io.Copy(w, rc)
		must(t, err)
		must(t, w.Close())
		rc.Close()
	}
	return dir
}

// mcpbCLI is the pinned mcpb CLI scripts/bundle installed.
func mcpbCLI(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(repoRoot(t), ".cache/npm-mcpb/node_modules/.bin/mcpb"), args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mcpb %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// buildBundle runs scripts/bundle for this machine's platform, once per
// test binary, and returns the bundle's path.
func buildBundle(t *testing.T) string {
	t.Helper()
	needTool(t, "node")
	needTool(t, "npm")
	bundleOnce.Do(func() {
		bundlePath, bundleErr = func() (string, error) {
			cmd := exec.Command(filepath.Join(repoRoot(t), "scripts", "bundle"))
			cmd.Dir = repoRoot(t)
			cmd.Env = append(os.Environ(), "BUNDLE_OUT="+filepath.Join(shared, "bundle"), "BUNDLE_PLATFORMS="+runtime.GOOS+"/"+runtime.GOARCH)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				return "", fmt.Errorf("scripts/bundle: %v\n%s", err, stderr.String())
			}
			lines := strings.Fields(string(out))
			if len(lines) != 1 || !strings.HasSuffix(lines[0], "-"+runtime.GOOS+"-"+runtime.GOARCH+".mcpb") {
				return "", fmt.Errorf("scripts/bundle printed %q, want one bundle for %s/%s", lines, runtime.GOOS, runtime.GOARCH)
			}
			return lines[0], nil
		}()
	})
	if bundleErr != nil {
		t.Fatal(bundleErr)
	}
	return bundlePath
}

var (
	bundleOnce sync.Once
	bundlePath string
	bundleErr  error
)

// The checked-in manifest passes the official validator, names the
// release's version and the license, has a binary entry for each OS
// (Windows' .exe by platform override), a required directory picker for the
// folder and the approval page on by default at 127.0.0.1:0.
func TestBundleManifestValidates(t *testing.T) {
	src := filepath.Join(repoRoot(t), "packaging/mcpb/manifest.json")
	m := readManifest(t, src)
	if m.Version != version.Release {
		t.Errorf("manifest version %q, internal/version.Release %q", m.Version, version.Release)
	}
	if m.License != "Apache-2.0" {
		t.Errorf("license %q", m.License)
	}
	lic, err := os.ReadFile(filepath.Join(repoRoot(t), "LICENSE"))
	must(t, err)
	if !strings.Contains(string(lic), "Apache License") {
		t.Errorf("LICENSE is not the Apache License the manifest names")
	}
	if m.Server.Type != "binary" || !slices.Equal(m.Compatibility.Platforms, []string{"darwin", "win32", "linux"}) {
		t.Errorf("server type %q, platforms %v", m.Server.Type, m.Compatibility.Platforms)
	}
	if m.Server.MCPConfig.PlatformOverrides["win32"].Command != "${__dirname}/server/mcpsafe.exe" {
		t.Errorf("no Windows binary: %+v", m.Server.MCPConfig.PlatformOverrides)
	}
	if f := m.UserConfig["folder"]; f.Type != "directory" || !f.Required {
		t.Errorf("folder: %+v", f)
	}
	if p := m.UserConfig["approval_page"]; p.Default != "127.0.0.1:0" {
		t.Errorf("approval_page: %+v", p)
	}
	needTool(t, "node")
	needTool(t, "npm")
	buildBundle(t) // installs the pinned CLI
	if out := mcpbCLI(t, "validate", src); !strings.Contains(out, "validation passes") {
		t.Fatalf("mcpb validate: %s", out)
	}
	// Control: the validator refuses a manifest that breaks its schema.
	bad := filepath.Join(t.TempDir(), "manifest.json")
	b, _ := os.ReadFile(src)
	must(t, os.WriteFile(bad, []byte(strings.Replace(string(b), `"type": "binary"`, `"type": "exe"`, 1)), 0o644))
	if out, err := exec.Command(filepath.Join(repoRoot(t), ".cache/npm-mcpb/node_modules/.bin/mcpb"), "validate", bad).CombinedOutput(); err == nil {
		t.Fatalf("mcpb validate passed a manifest with server type exe: %s", out)
	}
}

// The bundle for this machine, unpacked and started exactly as its
// manifest tells a host, serves a real MCP client: its tools are the ones
// the manifest lists, with the annotations it names; delete_file reaches
// the approval page (the link comes by URL elicitation) and deletes only
// after Approve; Deny deletes nothing.
func TestBundleServesAsAHostStartsIt(t *testing.T) {
	bundle := buildBundle(t)
	dir := unzip(t, bundle)
	mpath := filepath.Join(dir, "manifest.json")
	if out := mcpbCLI(t, "validate", mpath); !strings.Contains(out, "validation passes") {
		t.Fatalf("mcpb validate on the bundled manifest: %s", out)
	}
	var files []string
	must(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	}))
	exe := map[bool]string{true: "server/mcpsafe.exe", false: "server/mcpsafe"}[runtime.GOOS == "windows"]
	if want := []string{"LICENSE", "manifest.json", exe}; !slices.Equal(files, want) {
		t.Fatalf("the bundle holds %v, want %v", files, want)
	}
	m := readManifest(t, mpath)
	if !slices.Equal(m.Compatibility.Platforms, []string{hostPlatform()}) {
		t.Fatalf("the %s bundle says it runs on %v", runtime.GOOS, m.Compatibility.Platforms)
	}
	folder := t.TempDir()
	must(t, os.WriteFile(filepath.Join(folder, "old.txt"), []byte("delete me"), 0o644))
	must(t, os.WriteFile(filepath.Join(folder, "keep.txt"), []byte("keep me"), 0o644))
	argv, env := hostCommand(t, m, dir, hostPlatform(), map[string]any{"folder": folder})
	if want := filepath.Join(dir, m.Server.EntryPoint); argv[0] != want {
		t.Fatalf("the host would run %q, not the entry point %q", argv[0], want)
	}
	state := t.TempDir()
	cmd := exec.Command(argv[0], argv[1:]...)
	// A host passes its own environment; here the journal's default
	// directory is a temporary one, and no browser opens.
	cmd.Env = append(append(os.Environ(), env...), "XDG_STATE_HOME="+state, "BROWSER=true")
	var stderr strings.Builder
	cmd.Stderr = &stderr

	decision := "approve"
	var seen []string
	copts := &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if r.Params.Mode != "url" || !strings.HasPrefix(r.Params.URL, "http://127.0.0.1:") {
				t.Errorf("elicitation %+v, want the approval page's link", r.Params)
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			// Nothing has run before the person decides.
			if _, err := os.Stat(filepath.Join(folder, "old.txt")); err != nil {
				t.Errorf("old.txt is gone before anyone decided: %v", err)
			}
			seen = append(seen, decision)
			if err := pagetest.Decide(r.Params.URL, decision); err != nil {
				t.Errorf("%s on the page: %v", decision, err)
			}
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bundle-host", Version: "1"}, copts).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v; stderr: %s", err, stderr.String())
	}
	defer cs.Close()

	// The tools are the manifest's, annotated as it says.
	lt, err := cs.ListTools(context.Background(), nil)
	must(t, err)
	var listed, named []string
	annotations := m.Meta["io.github.mcpsafe"].ToolAnnotations
	for _, tl := range lt.Tools {
		listed = append(listed, tl.Name)
		raw, _ := json.Marshal(tl.Annotations)
		var got map[string]any
		must(t, json.Unmarshal(raw, &got))
		for k, want := range annotations[tl.Name] {
			if got[k] != want {
				t.Errorf("%s: annotation %s is %v on the server, %v in the manifest", tl.Name, k, got[k], want)
			}
		}
	}
	for _, tl := range m.Tools {
		named = append(named, tl.Name)
	}
	slices.Sort(listed)
	slices.Sort(named)
	if !slices.Equal(listed, named) || len(annotations) != len(named) {
		t.Fatalf("the server lists %v, the manifest names %v (annotations for %d)", listed, named, len(annotations))
	}

	// Deny first: nothing is deleted.
	decision = "deny"
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": filepath.Join(folder, "keep.txt")}})
	must(t, err)
	if !res.IsError {
		t.Errorf("denied delete answered as a success: %+v", res.Content)
	}
	if _, err := os.Stat(filepath.Join(folder, "keep.txt")); err != nil {
		t.Fatalf("keep.txt is gone after Deny: %v", err)
	}
	// Approve: deleted, once.
	decision = "approve"
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": filepath.Join(folder, "old.txt")}})
	must(t, err)
	if res.IsError {
		t.Fatalf("approved delete failed: %+v; stderr: %s", res.Content, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(folder, "old.txt")); !os.IsNotExist(err) {
		t.Fatalf("old.txt still there after Approve: %v", err)
	}
	if !slices.Equal(seen, []string{"deny", "approve"}) {
		t.Fatalf("page decisions %v, want one per call", seen)
	}
	// The journal (in its default place) says the page approved it.
	journals, _ := filepath.Glob(filepath.Join(state, "mcpsafe", "*.jsonl"))
	if len(journals) != 1 {
		t.Fatalf("journals under %s: %v", state, journals)
	}
	j, err := os.ReadFile(journals[0])
	must(t, err)
	if !strings.Contains(string(j), `"page-approved"`) {
		t.Fatalf("the journal has no page-approved record:\n%s", j)
	}
}
