package proxy

import (
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/mcpsafe/mcpsafe/prompt"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// audiencePrefix starts every derived audience.
const audiencePrefix = "mcpsafe-proxy/"

// DefaultAudience is the audience a proxy uses when none is configured:
// "mcpsafe-proxy/LABEL/DIGEST", where LABEL is a readable hint (the
// program, or the package a launcher such as npx runs, or the URL's host)
// and DIGEST is the first 16 hex digits of a SHA-256 over the upstream's
// exact command line (the program's absolute path, its arguments and its
// working directory) or URL. Two proxies in front of different upstream
// servers therefore never accept each other's approvals, even when they
// share a key. The environment is not part of it: two upstreams that
// differ only there share a default audience.
//
// A transport that names no upstream (in memory, or a type this package
// does not know) gets a random audience, unique to this process.
func DefaultAudience(upstream mcp.Transport) string {
	id, label := upstreamIdentity(upstream)
	if id == nil {
		var b [8]byte
		rand.Read(b[:])
		return audiencePrefix + "unnamed-upstream/" + hex.EncodeToString(b[:])
	}
	raw, _ := json.Marshal(id)
	sum := sha256.Sum256(raw)
	return audiencePrefix + label + "/" + hex.EncodeToString(sum[:8])
}

// upstreamIdentity is what names the upstream a transport reaches (nil
// for one that names none) and a readable label of it: both from what the
// operator gave, the command line or URL.
func upstreamIdentity(upstream mcp.Transport) (id any, label string) {
	switch t := upstream.(type) {
	case *mcp.CommandTransport:
		if t.Command != nil {
			id, label = commandIdentity(t.Command)
		}
	case *UpstreamPipe:
		// The stdio fast lane's transport: the same command, the same
		// identity as a CommandTransport would have.
		if t.cmd != nil {
			id, label = commandIdentity(t.cmd)
		}
	case *mcp.StreamableClientTransport:
		id, label = urlIdentity(t.Endpoint)
	case *mcp.SSEClientTransport:
		id, label = urlIdentity(t.Endpoint)
	}
	return id, label
}

// launchers run another program named by their first argument, which is
// the more telling label.
var launchers = map[string]bool{
	"npx": true, "bunx": true, "uvx": true, "uv": true, "pipx": true, "node": true, "deno": true,
	"bun": true, "python": true, "python3": true, "docker": true, "podman": true, "npm": true,
	"pnpm": true, "yarn": true, "java": true, "go": true, "ruby": true, "env": true,
}

// subcommands of those launchers that are not the program.
var subcommands = map[string]bool{"run": true, "exec": true, "x": true, "dlx": true, "tool": true, "start": true}

func commandIdentity(cmd *exec.Cmd) (any, string) {
	path := cmd.Path
	if !filepath.IsAbs(path) && strings.ContainsRune(path, filepath.Separator) {
		// A relative program path means a different program in another
		// directory.
		if abs, err := filepath.Abs(filepath.Join(cmd.Dir, path)); err == nil {
			path = abs
		}
	}
	dir := cmd.Dir
	if dir != "" {
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
	}
	var args []string
	if len(cmd.Args) > 1 {
		args = cmd.Args[1:]
	}
	label := filepath.Base(path)
	if launchers[strings.TrimSuffix(label, ".exe")] {
		for _, a := range args {
			if strings.HasPrefix(a, "-") || subcommands[a] {
				continue
			}
			label = filepath.Base(a)
			break
		}
	}
	return struct {
		Path string   `json:"path"`
		Args []string `json:"args"`
		Dir  string   `json:"dir"`
	}{path, args, dir}, cleanLabel(label)
}

func urlIdentity(endpoint string) (any, string) {
	label := "url"
	if u, err := url.Parse(endpoint); err == nil && u.Host != "" {
		label = u.Host
	}
	return struct {
		URL string `json:"url"`
	}{endpoint}, cleanLabel(label)
}

// cleanLabel keeps the label to lower-case letters, digits, '.', '_' and
// '-', at most 40 of them.
func cleanLabel(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, s)
	s = strings.Trim(s, "-.")
	if len(s) > 40 {
		s = strings.TrimRight(s[:40], "-.")
	}
	return cmp.Or(s, "upstream")
}

// serverLine names the server in every plan: by the name a person knows
// it by (personName) and what the upstream calls itself, which it chooses
// and may not be true.
func serverLine(name string, info *mcp.Implementation) string {
	line := "server: " + prompt.Quote(name)
	if info == nil || info.Name == "" {
		return line
	}
	version := ""
	if info.Version != "" {
		version = " version " + prompt.Quote(info.Version)
	}
	if info.Name == name {
		return line + version + " (the name the upstream gives itself)"
	}
	return line + " (the upstream calls itself " + prompt.Quote(info.Name) + version + ")"
}
