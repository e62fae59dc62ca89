package packaging

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpsafe/mcpsafe/internal/version"
)

// registrySchemaSHA256 pins testdata/server.schema.json (see its README).
const registrySchemaSHA256 = "3fba09590c99f61735d234822279f4223fab9e300c0a81e81c91ab62a4114de0"

// registrySchema is the MCP Registry's 2025-12-11 server.json schema,
// resolved for validation.
func registrySchema(t *testing.T) *jsonschema.Resolved {
	t.Helper()
	b, err := os.ReadFile("testdata/server.schema.json")
	must(t, err)
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != registrySchemaSHA256 {
		t.Fatalf("testdata/server.schema.json is not the pinned copy (sha256 %x)", sum)
	}
	var s jsonschema.Schema
	must(t, json.Unmarshal(b, &s))
	r, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: false})
	must(t, err)
	return r
}

// validateServerJSON checks doc against the registry's schema and the
// rules this repository keeps: the schema it names, the release's
// version everywhere, and packages that are the bundles and the image.
func validateServerJSON(t *testing.T, r *jsonschema.Resolved, raw []byte) error {
	t.Helper()
	var doc any
	must(t, json.Unmarshal(raw, &doc))
	return r.Validate(doc)
}

type serverJSON struct {
	Schema   string `json:"$schema"`
	Name     string `json:"name"`
	Version  string `json:"version"`
	Packages []struct {
		RegistryType string `json:"registryType"`
		Identifier   string `json:"identifier"`
		Version      string `json:"version"`
		FileSHA256   string `json:"fileSha256"`
	} `json:"packages"`
}

// server.json validates against the official schema, names it, and
// carries the module's release version, for itself and every package: the
// six bundles scripts/bundle makes (named as it names them) and the image.
// Controls: documents that break the schema are refused.
func TestServerJSONValidates(t *testing.T) {
	r := registrySchema(t)
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "server.json"))
	must(t, err)
	if err := validateServerJSON(t, r, raw); err != nil {
		t.Fatalf("server.json: %v", err)
	}
	var s serverJSON
	must(t, json.Unmarshal(raw, &s))
	if s.Schema != "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json" {
		t.Errorf("$schema %q", s.Schema)
	}
	if s.Version != version.Release {
		t.Errorf("server.json version %q, internal/version.Release %q", s.Version, version.Release)
	}
	bundles := 0
	for _, p := range s.Packages {
		if p.Version != version.Release || !strings.Contains(p.Identifier, version.Release) {
			t.Errorf("package %s %s is not at version %s", p.RegistryType, p.Identifier, version.Release)
		}
		if p.RegistryType == "mcpb" {
			bundles++
			if !strings.HasPrefix(p.Identifier, "https://github.com/mcpsafe/mcpsafe/releases/download/v"+version.Release+"/mcpsafe-files-"+version.Release+"-") {
				t.Errorf("bundle %s is not a release asset named as scripts/bundle names it", p.Identifier)
			}
		}
	}
	if bundles != 6 {
		t.Errorf("%d bundles, want one per platform (6)", bundles)
	}
	for name, edit := range map[string][2]string{
		"description over 100 characters": {`"description": "`, `"description": "` + strings.Repeat("x", 100)},
		"name without a namespace":        {`"name": "io.github.mcpsafe/mcpsafe-files"`, `"name": "mcpsafe-files"`},
		"package version latest":          {`"version": "` + version.Release + `",` + "\n      \"fileSha256\"", `"version": "latest",` + "\n      \"fileSha256\""},
		"bundle hash not hex":             {`"fileSha256": "0000`, `"fileSha256": "zzzz`},
	} {
		bad := strings.Replace(string(raw), edit[0], edit[1], 1)
		if bad == string(raw) {
			t.Fatalf("%s: the edit did not apply", name)
		}
		if err := validateServerJSON(t, r, []byte(bad)); err == nil {
			t.Errorf("%s: the schema accepted it", name)
		}
	}
}
