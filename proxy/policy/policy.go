package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"text/template"
	"time"

	"cel.dev/cel-go/cel"
	"go.yaml.in/yaml/v3"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/grants"
	"github.com/mcpsafe/mcpsafe/grants/celscope"
	"github.com/mcpsafe/mcpsafe/internal/celenv"
	"github.com/mcpsafe/mcpsafe/internal/optin"
	"github.com/mcpsafe/mcpsafe/internal/toolschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Policy is a parsed, compiled policy file. The zero Policy (or a nil
// *Policy) is the default policy: every tool upstream does not mark
// read-only is gated, and irreversible unless upstream marks it
// destructiveHint: false.
type Policy struct {
	Source string // file name, for error messages
	// Name is what plans call the upstream server (name: in the file),
	// for a person; without it, the gateway's name for the server or the
	// upstream's own title or name.
	Name          string
	Mode          mcpsafe.Mode
	AllowTokenFor []mcpsafe.OptIn
	// AllowGrantsFor names the irreversible tools whose grants are offered.
	AllowGrantsFor []string
	Tools          map[string]*Tool
	// UpstreamRequests says which requests the upstream server may send
	// the downstream client through the proxy.
	UpstreamRequests UpstreamRequests
	// RelayUnknownMethods relays the client's requests and notifications of
	// methods the proxy does not know (unknown_methods: relay); the default
	// refuses them (the proxy's unknown-method relay).
	RelayUnknownMethods bool
	// TrustUpstreamGate (trust_upstream_gate: true) declares that the
	// upstream asks the human itself (mcpsafe files, another mcpsafe
	// proxy): a tool whose input schema declares approval_token passes
	// through, and its approval is the upstream's alone. Never assumed:
	// without it such a tool is gated here too, and the human is asked
	// twice.
	TrustUpstreamGate bool
	TrustLine         int // where it was set
	// RequireUserInteraction (require_user_interaction: true) marks the
	// gated tools for Claude Code's own prompt before every call
	// (mcpsafe.Options.RequireUserInteraction), as the flag
	// --require-user-interaction does. Read at start: a reload that
	// changes it is refused.
	RequireUserInteraction bool
}

// TrustsUpstreamGate reports whether t passes through because the
// upstream gates it itself: declared in the file, seen in the tool's
// schema (its own approval_token argument), and not named here with
// settings of its own (a policy only adds strictness).
func (p *Policy) TrustsUpstreamGate(t *mcp.Tool) bool {
	if p == nil || !p.TrustUpstreamGate || !toolschema.HasProperty(t.InputSchema, mcpsafe.TokenField) {
		return false
	}
	tp := p.Tools[t.Name]
	return tp == nil || !tp.HasSettings()
}

// Tool is one named tool's entry.
type Tool struct {
	Name string
	Line int
	// Gate gates a tool that upstream marks read-only.
	Gate bool
	// Irreversible, when set, overrides what upstream's annotations say.
	// Only a named tool can be marked reversible, never by default.
	Irreversible *bool
	Mode         mcpsafe.Mode
	// MinAssurance is the weakest approval the tool takes (min_assurance:
	// local_page, channel or passkey); 0 takes any.
	MinAssurance mcpsafe.Assurance
	Preview      *template.Template
	PreviewLine  int
	Deny         []mcpsafe.Rule
	Allow        []mcpsafe.Rule
	AutoApprove  []mcpsafe.Rule
	Resolver     *Resolver
	SecretFields []string
	// Grants lets the approver choose a standing grant (grants: in the file).
	Grants *mcpsafe.GrantPolicy
	// Effect computes what the call changes, from the upstream (effect:
	// in the file; see Effect).
	Effect *Effect
	// argRefs are the argument names its rules and resolver arguments read
	// (args.NAME, args["NAME"]), checked against the upstream tool's schema
	// at startup together with the preview's (CheckArgumentNames).
	argRefs []argRef
}

// argRef is one argument name an expression reads, and where.
type argRef struct {
	name  string
	where string // "deny[0]", "resolver.args.path"
	line  int
}

// HasSettings reports whether the entry asks for anything only a gated
// tool can do.
func (t *Tool) HasSettings() bool {
	return t.Gate || t.Irreversible != nil || t.Mode != "" || t.MinAssurance != 0 || t.Preview != nil ||
		len(t.Deny)+len(t.Allow)+len(t.AutoApprove) > 0 || t.Resolver != nil || len(t.SecretFields) > 0 || t.Grants != nil || t.Effect != nil
}

// The YAML shapes. Expression fields are kept as nodes so that errors can
// name their line.
type policyFile struct {
	Name             string              `yaml:"name"`
	Mode             string              `yaml:"mode"`
	AllowTokenFor    []string            `yaml:"allow_token_for"`
	AllowGrantsFor   []string            `yaml:"allow_grants_for"`
	Tools            map[string]toolFile `yaml:"tools"`
	UpstreamRequests map[string]string   `yaml:"upstream_requests"`
	UnknownMethods   string              `yaml:"unknown_methods"`

	TrustUpstreamGate      bool `yaml:"trust_upstream_gate"`
	RequireUserInteraction bool `yaml:"require_user_interaction"`
}

type toolFile struct {
	Gate         *bool         `yaml:"gate"`
	Irreversible *bool         `yaml:"irreversible"`
	Mode         string        `yaml:"mode"`
	MinAssurance string        `yaml:"min_assurance"`
	Preview      yaml.Node     `yaml:"preview"`
	Deny         []ruleFile    `yaml:"deny"`
	Allow        []ruleFile    `yaml:"allow"`
	AutoApprove  []ruleFile    `yaml:"auto_approve"`
	Resolver     *resolverFile `yaml:"resolver"`
	SecretFields []string      `yaml:"secret_fields"`
	Grants       *grantsFile   `yaml:"grants"`
	Effect       *effectFile   `yaml:"effect"`
}

// grantsFile is a tool's standing-grant policy:
//
//	grants: {max_ttl: 1h, max_uses: 20, client_relayed: false,
//	         scopes: [{words: "paths under /data/tmp/", cel: 'args.path.startsWith("/data/tmp/")'}]}
type grantsFile struct {
	MaxTTL        string      `yaml:"max_ttl"`
	MaxUses       int         `yaml:"max_uses"`
	ClientRelayed bool        `yaml:"client_relayed"`
	Scopes        []scopeFile `yaml:"scopes"`
}

type scopeFile struct {
	Words string `yaml:"words"`
	CEL   string `yaml:"cel"`
}

type resolverFile struct {
	Tool string    `yaml:"tool"`
	Args yaml.Node `yaml:"args"`
	Bind yaml.Node `yaml:"bind"`
}

// ruleFile is a rule: a CEL expression, or {name, expr}.
type ruleFile struct {
	Name string
	Expr *yaml.Node
	Line int
}

func (r *ruleFile) UnmarshalYAML(n *yaml.Node) error {
	r.Line = n.Line
	switch n.Kind {
	case yaml.ScalarNode:
		r.Expr = n
		return nil
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			switch k.Value {
			case "name":
				if v.Kind != yaml.ScalarNode {
					return fmt.Errorf("line %d: rule name must be a string", v.Line)
				}
				r.Name = v.Value
			case "expr":
				r.Expr = v
			default:
				// Node.Decode does not inherit KnownFields, so a typo here
				// must be caught by hand.
				return fmt.Errorf("line %d: unknown key %q in a rule (%sknown: name, expr)", k.Line, k.Value, didYouMean(k.Value, []string{"name", "expr"}, "%q"))
			}
		}
		if r.Expr == nil {
			return fmt.Errorf("line %d: rule has no expr", n.Line)
		}
		return nil
	}
	return fmt.Errorf("line %d: a rule is a CEL expression or {name, expr}", n.Line)
}

// Load reads and compiles a policy file.
func Load(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse parses and compiles a policy. Unknown keys, bad modes, CEL
// that does not compile or cannot yield a bool, and templates that do not
// parse are errors that name the line.
func Parse(source string, data []byte) (*Policy, error) {
	p := &Policy{Source: source, Tools: map[string]*Tool{}}
	var f policyFile
	switch empty, err := decodeStrict(source, data, &f); {
	case err != nil:
		return nil, err
	case empty:
		return p, nil // an empty file is the default policy
	}
	// Tool entries' lines come from a second, node-level pass.
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	lines := map[string]int{}
	if _, tools := topKey(&root, "tools"); tools != nil {
		for j := 0; j+1 < len(tools.Content); j += 2 {
			lines[tools.Content[j].Value] = tools.Content[j].Line
		}
	}
	p.Name = strings.TrimSpace(f.Name)
	var err error
	if p.Mode, err = parseMode(f.Mode); err != nil {
		return nil, fmt.Errorf("%s:%d: mode: %w", source, keyLine(&root, "mode"), err)
	}
	for _, v := range f.AllowTokenFor {
		o, err := optin.Parse(v)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: allow_token_for: %w", source, keyLine(&root, "allow_token_for"), err)
		}
		p.AllowTokenFor = append(p.AllowTokenFor, o)
	}
	for _, v := range f.AllowGrantsFor {
		if v == "" || strings.ContainsAny(v, " \t\n*?[]") {
			return nil, fmt.Errorf("%s: allow_grants_for: %q is not an exact tool name", source, v)
		}
		p.AllowGrantsFor = append(p.AllowGrantsFor, v)
	}
	if p.UpstreamRequests, err = parseUpstreamRequests(f.UpstreamRequests); err != nil {
		return nil, fmt.Errorf("%s: upstream_requests: %w", source, err)
	}
	switch f.UnknownMethods {
	case "", "refuse":
	case "relay":
		p.RelayUnknownMethods = true
	default:
		return nil, fmt.Errorf("%s:%d: unknown_methods: %q is neither relay nor refuse", source, keyLine(&root, "unknown_methods"), f.UnknownMethods)
	}
	p.TrustUpstreamGate, p.TrustLine = f.TrustUpstreamGate, keyLine(&root, "trust_upstream_gate")
	p.RequireUserInteraction = f.RequireUserInteraction
	env, err := celenv.Env()
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(f.Tools)) {
		tp, err := compileTool(env, source, name, lines[name], f.Tools[name])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.Tools[name] = tp
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

// parseMode reads a mode: setting; "" (none set) is the zero Mode.
func parseMode(s string) (mcpsafe.Mode, error) {
	switch m := mcpsafe.Mode(s); m {
	case "", mcpsafe.ModeAuto, mcpsafe.ModeElicit, mcpsafe.ModeToken, mcpsafe.ModeChannel, mcpsafe.ModePage, mcpsafe.ModeCard:
		return m, nil
	}
	return "", fmt.Errorf("unknown mode %q (want auto, elicit, token, channel, page or card)", s)
}

// parseAssurance reads a level by the name the journal gives it.
func parseAssurance(s string) (mcpsafe.Assurance, error) {
	for a := mcpsafe.AssuranceClientRelayed; a <= mcpsafe.AssurancePasskey; a++ {
		if a.String() == s {
			return a, nil
		}
	}
	return 0, fmt.Errorf("unknown level %q (want client_relayed, local_page, channel or passkey)", s)
}

func compileTool(env *cel.Env, source, name string, line int, f toolFile) (*Tool, error) {
	tp := &Tool{Name: name, Line: line, Gate: f.Gate != nil, Irreversible: f.Irreversible, SecretFields: f.SecretFields}
	tc := &toolCompiler{env: env, source: source, tp: tp}
	if name == "" || strings.TrimSpace(name) != name {
		return nil, tc.at(line, "not an exact tool name")
	}
	if f.Gate != nil && !*f.Gate {
		return nil, tc.at(line, "gate: false is not allowed: a policy can only make the default stricter (tools upstream marks read-only pass through already; for an upstream that asks the human itself, such as mcpsafe files, set trust_upstream_gate: true at the top of the file)")
	}
	var err error
	if tp.Mode, err = parseMode(f.Mode); err != nil {
		return nil, tc.at(line, "mode: %v", err)
	}
	if f.MinAssurance != "" {
		a, err := parseAssurance(f.MinAssurance)
		if err != nil {
			return nil, tc.at(line, "min_assurance: %v", err)
		}
		tp.MinAssurance = a
	}
	if !f.Preview.IsZero() {
		if f.Preview.Kind != yaml.ScalarNode {
			return nil, tc.at(f.Preview.Line, "preview must be a template string")
		}
		tmpl, err := template.New(name).Option("missingkey=error").Parse(f.Preview.Value)
		if err != nil {
			return nil, tc.at(f.Preview.Line, "preview: %v", err)
		}
		tp.Preview = tmpl
		tp.PreviewLine = f.Preview.Line
	}
	if f.Grants != nil {
		if tp.Grants, err = grantPolicy(f.Grants); err != nil {
			tc.fail(line, "grants: %v", err)
		}
	}
	tp.Deny = tc.rules("deny", f.Deny)
	tp.Allow = tc.rules("allow", f.Allow)
	tp.AutoApprove = tc.rules("auto_approve", f.AutoApprove)
	if r := f.Resolver; r != nil {
		if r.Tool == "" {
			tc.fail(line, "resolver: tool is required")
		}
		args := tc.callArgs(r.Args, "resolver.args")
		bind, err := bindFields(r.Bind)
		if err != nil {
			tc.fail(r.Bind.Line, "resolver.bind: %v", err)
		}
		tp.Resolver = &Resolver{Tool: r.Tool, Line: line, args: args, Bind: bind}
	}
	if f.Effect != nil {
		tp.Effect = tc.effect(line, f.Effect)
	}
	if err := errors.Join(tc.errs...); err != nil {
		return nil, err
	}
	return tp, nil
}

// toolCompiler compiles one tool entry: it collects the entry's errors and
// the argument names its expressions read (Tool.argRefs).
type toolCompiler struct {
	env    *cel.Env
	source string
	tp     *Tool
	errs   []error
}

// at is an error in the entry, at a line of the file.
func (tc *toolCompiler) at(line int, format string, args ...any) error {
	return fmt.Errorf("%s:%d: tools.%s: %s", tc.source, line, tc.tp.Name, fmt.Sprintf(format, args...))
}

func (tc *toolCompiler) fail(line int, format string, args ...any) {
	tc.errs = append(tc.errs, tc.at(line, format, args...))
}

// expr compiles the expression n found at where ("deny[0]",
// "resolver.args.path"), an error naming errLine, and records the argument
// names it reads. A nil program: it did not compile.
func (tc *toolCompiler) expr(n *yaml.Node, where string, errLine int, rule bool) (cel.Program, []string) {
	prg, refs, err := compileExpr(tc.env, n, rule)
	if err != nil {
		tc.fail(errLine, "%s: %v", where, err)
		return nil, nil
	}
	for _, r := range refs {
		tc.tp.argRefs = append(tc.tp.argRefs, argRef{name: r, where: where, line: n.Line})
	}
	return prg, refs
}

func (tc *toolCompiler) rules(kind string, in []ruleFile) []mcpsafe.Rule {
	var out []mcpsafe.Rule
	for i, rf := range in {
		prg, _ := tc.expr(rf.Expr, fmt.Sprintf("%s[%d]", kind, i), rf.Expr.Line, true)
		if prg == nil {
			continue
		}
		// The expression is part of the rule's name so that editing it
		// changes the policy hash and voids outstanding grants.
		rname := rf.Expr.Value
		if rf.Name != "" {
			rname = rf.Name + ": " + rf.Expr.Value
		}
		out = append(out, mcpsafe.Rule{Name: rname, Match: boolRule(prg)})
	}
	return out
}

// grantPolicy checks a grants: entry. Scopes in the file are fixed (the
// same for every approved call); "exactly these arguments" is always
// offered besides them.
func grantPolicy(gf *grantsFile) (*mcpsafe.GrantPolicy, error) {
	ttl, err := time.ParseDuration(gf.MaxTTL)
	if err != nil || ttl <= 0 {
		return nil, fmt.Errorf("max_ttl %q: want a positive duration such as 1h", gf.MaxTTL)
	}
	if gf.MaxUses < 2 {
		return nil, fmt.Errorf("max_uses %d: want at least 2 (one use is an ordinary approval)", gf.MaxUses)
	}
	var scopes []grants.Scope
	for i, sc := range gf.Scopes {
		if strings.TrimSpace(sc.Words) == "" || strings.TrimSpace(sc.CEL) == "" {
			return nil, fmt.Errorf("scopes[%d]: words and cel are both required", i)
		}
		if err := celscope.Check(sc.CEL); err != nil {
			return nil, fmt.Errorf("scopes[%d]: %v", i, err)
		}
		scopes = append(scopes, grants.Scope{Words: sc.Words, CEL: sc.CEL})
	}
	gp := &mcpsafe.GrantPolicy{MaxTTL: ttl, MaxUses: gf.MaxUses, ClientRelayed: gf.ClientRelayed}
	if len(scopes) > 0 {
		gp.Scopes = func(mcpsafe.Call, mcpsafe.Resolved) ([]grants.Scope, error) { return scopes, nil }
		gp.ScopesBinding = scopesBinding(scopes)
	}
	return gp, nil
}

// scopesBinding digests a file's scopes, words and CEL, in order: it goes
// into the tool's policy hash, so that a reload that changes a scope (or
// its position, which its offer IDs name) voids the grants made under the
// old list and the approvals pending under it.
func scopesBinding(scopes []grants.Scope) string {
	b, _ := json.Marshal(scopes)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
