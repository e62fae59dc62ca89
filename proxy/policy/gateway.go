package policy

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// NameSeparator joins a gateway server's name and an upstream tool or
// prompt name: tool "write_file" of server "fs" is "fs__write_file" to
// clients. Server names may not contain '_', so the first "__" in a name
// always ends the server name and two prefixed names never collide.
const NameSeparator = "__"

var serverNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// GatewayFile is a parsed gateway configuration (`mcpsafe proxy --config`).
type GatewayFile struct {
	Source  string
	Servers []*ServerSpec // sorted by name
}

// ServerSpec is one upstream of a gateway.
type ServerSpec struct {
	Name    string
	Command []string          // stdio upstream: program and arguments
	Env     map[string]string // added to the gateway's environment
	Dir     string            // working directory of the command
	URL     string            // streamable HTTP upstream
	// Audience is bound into this server's approvals; empty: derived from
	// the command line or URL (DefaultAudience).
	Audience string
	// Bare serves the upstream's names without the "NAME__" prefix. A
	// bare name that collides with another server's is an error, at
	// startup and whenever an upstream re-announces its tools.
	Bare   bool
	Policy *Policy
	// PolicyText is what Policy was compiled from: a reload compares it to
	// notice a change.
	PolicyText string
}

type gatewayFileYAML struct {
	Servers map[string]serverYAML `yaml:"servers"`
}

type serverYAML struct {
	Command    []string          `yaml:"command"`
	Env        map[string]string `yaml:"env"`
	Dir        string            `yaml:"dir"`
	URL        string            `yaml:"url"`
	Audience   string            `yaml:"audience"`
	Prefix     *bool             `yaml:"prefix"`
	PolicyFile string            `yaml:"policy_file"`
	Policy     yaml.Node         `yaml:"policy"`
}

// LoadGateway reads and checks a gateway configuration file. Policy files
// it names are read relative to it.
func LoadGateway(path string) (*GatewayFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseGateway(path, data)
}

// ParseGateway parses a gateway configuration: unknown keys, a server
// with no or two upstreams, a name that is not lower-case letters, digits
// and '-', or a policy that does not compile are errors.
func ParseGateway(source string, data []byte) (*GatewayFile, error) {
	var f gatewayFileYAML
	switch empty, err := decodeStrict(source, data, &f); {
	case err != nil:
		return nil, err
	case empty:
		return nil, fmt.Errorf("%s: empty gateway configuration", source)
	}
	if len(f.Servers) == 0 {
		return nil, fmt.Errorf("%s: no servers", source)
	}
	out := &GatewayFile{Source: source}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(f.Servers)) {
		sy := f.Servers[name]
		at := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("%s: servers.%s: %s", source, name, fmt.Sprintf(format, args...)))
		}
		if !serverNameRE.MatchString(name) {
			at("a server name is 1 to 32 lower-case letters, digits and '-' (no '_': %q separates it from tool names)", NameSeparator)
			continue
		}
		sp := &ServerSpec{Name: name, Command: sy.Command, Env: sy.Env, Dir: sy.Dir, URL: sy.URL, Audience: sy.Audience,
			Bare: sy.Prefix != nil && !*sy.Prefix}
		switch {
		case len(sy.Command) == 0 && sy.URL == "":
			at("give command or url")
		case len(sy.Command) > 0 && sy.URL != "":
			at("give command or url, not both")
		case sy.URL != "" && (len(sy.Env) > 0 || sy.Dir != ""):
			at("env and dir are for a command")
		}
		var ptext []byte
		psource := fmt.Sprintf("%s: servers.%s.policy", source, name)
		switch {
		case sy.PolicyFile != "" && !sy.Policy.IsZero():
			at("give policy or policy_file, not both")
			continue
		case sy.PolicyFile != "":
			p := sy.PolicyFile
			if !filepath.IsAbs(p) {
				p = filepath.Join(filepath.Dir(source), p)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				at("policy_file: %v", err)
				continue
			}
			ptext, psource = b, p
		case !sy.Policy.IsZero():
			b, err := yaml.Marshal(&sy.Policy)
			if err != nil {
				at("policy: %v", err)
				continue
			}
			ptext = b
			if block, ok := inlineBlock(data, &sy.Policy); ok {
				ptext = block
			}
		}
		// An inline policy is parsed where it stands: its errors name
		// lines of this file, not of the block.
		pad := 0
		if !sy.Policy.IsZero() && sy.PolicyFile == "" {
			pad = sy.Policy.Line - 1
		}
		pol, err := Parse(psource, append([]byte(strings.Repeat("\n", pad)), ptext...))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if pol.RelayUnknownMethods {
			// A method nobody here knows names no tool, prompt or URI to
			// route it by: it could be for any of the servers.
			errs = append(errs, fmt.Errorf("%s: unknown_methods: relay is for a single proxy; a gateway cannot tell which server a method it does not know is for", psource))
			continue
		}
		sp.Policy, sp.PolicyText = pol, string(ptext)
		out.Servers = append(out.Servers, sp)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// Prefix is what the gateway puts before the server's tool and prompt
// names: "NAME__", or "" when the server is bare (prefix: false).
func (sp *ServerSpec) Prefix() string {
	if sp.Bare {
		return ""
	}
	return sp.Name + NameSeparator
}

// Label names the server and its upstream (a command or a URL), for
// errors.
func (sp *ServerSpec) Label() string {
	return sp.Name + " (" + cmp.Or(strings.Join(sp.Command, " "), sp.URL) + ")"
}

// CheckAudiences refuses servers without an explicit audience when the
// ledger is shared, as a single proxy does: replicas must agree on every
// audience, and a derived one differs between hosts.
func (file *GatewayFile) CheckAudiences(sharedLedger bool) error {
	if !sharedLedger {
		return nil
	}
	var errs []error
	for _, sp := range file.Servers {
		if sp.Audience == "" {
			errs = append(errs, fmt.Errorf("%s: servers.%s.audience is required: the ledger is shared, so every replica must bind this server's approvals to the same name, and a name derived from the command line or URL may differ between hosts", file.Source, sp.Name))
		}
	}
	return errors.Join(errs...)
}

// inlineBlock is the text of the block mapping n (an inline policy) as it
// stands in data, its indentation removed: the lines from n's first key
// until one that is indented less (blank lines and comments indented less
// are kept as empty lines). A flow mapping ({...}) is not a block: false.
func inlineBlock(data []byte, n *yaml.Node) ([]byte, bool) {
	if n.Kind != yaml.MappingNode || n.Style&yaml.FlowStyle != 0 || n.Line < 1 || n.Column < 1 {
		return nil, false
	}
	lines := strings.Split(string(data), "\n")
	indent := n.Column - 1
	var out []string
scan:
	for _, l := range lines[min(n.Line-1, len(lines)):] {
		l = strings.TrimSuffix(l, "\r")
		lead := len(l) - len(strings.TrimLeft(l, " "))
		switch t := strings.TrimSpace(l); {
		case lead >= indent && t != "":
			out = append(out, l[indent:])
			continue
		case t == "" || strings.HasPrefix(t, "#"):
			out = append(out, "")
			continue
		}
		break scan
	}
	if len(out) == 0 {
		return nil, false
	}
	return []byte(strings.Join(out, "\n") + "\n"), true
}
