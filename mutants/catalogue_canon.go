// Converted from the Python catalogue (mutants/make.py) by convert-mutants;
// from now on edit it here. See docs/TESTING.md.

package mutants

// canonMutants break canonical JSON, sealing and the text shown to a human.
var canonMutants = []Mutant{
	{
		Name:     "audience-unbound",
		Packages: []string{".", "./internal/seal"},
		Why:      "audience not in the AEAD associated data (a version 2 grant does not carry it: the associated data is its only binding)",
		Edits: []Edit{
			{
				File: "internal/seal/seal.go",
				Old:  "\treturn append(ad, audience...)",
				New:  "\treturn ad",
			},
		},
	},
	{
		Name:     "canon-duplicate-keys",
		Packages: []string{"./internal/canon", "."},
		Why:      "duplicate object keys are accepted",
		Edits: []Edit{
			{
				File: "internal/frame/check.go",
				Old:  "\tcase bytes.Equal(first, key):\n\t\treturn &Error{Kind: ErrDuplicate",
				New:  "\tcase bytes.Equal(first, key):\n\t\treturn nil\n\tcase false:\n\t\treturn &Error{Kind: ErrDuplicate",
			},
		},
	},
	{
		Name:     "canon-lossy-numbers",
		Packages: []string{"./internal/canon"},
		Why:      "numbers that do not survive the IEEE round trip are accepted",
		Edits: []Edit{
			{
				File: "internal/canon/canon.go",
				Old:  "\tif want != got {\n",
				New:  "\tif want != got && false {\n",
			},
		},
	},
	{
		// (A mutant that accepted data after the top-level value survived: it is
		// equivalent, since jcs.Transform refuses trailing data on its own. See
		// docs/TESTING.md.)
		Name:     "canon-splitmember-unchecked",
		Packages: []string{"./internal/canon", "."},
		Why:      "SplitMember (the gate's first look at the arguments) skips the strict check, so duplicate keys collapse silently",
		Edits: []Edit{
			{
				File: "internal/canon/canon.go",
				Old:  "\tif _, err := Canonical(raw); err != nil {\n\t\treturn nil, nil, err\n\t}",
				New:  "\tif _, err := Canonical(raw); err != nil && false {\n\t\treturn nil, nil, err\n\t}",
			},
		},
	},
	{
		Name:     "canon-depth-unbounded",
		Packages: []string{"./internal/canon"},
		Why:      "nesting depth is not bounded",
		Edits: []Edit{
			{
				File: "internal/frame/check.go",
				Old:  "if depth >= w.rules.MaxDepth {",
				New:  "if depth >= w.rules.MaxDepth*1000000 {",
			},
		},
	},
	{
		Name:     "seal-ignores-tag",
		Packages: []string{"./internal/seal", "."},
		Why:      "Open decrypts without checking the GCM tag (AES-CTR with GCM's counter)",
		Edits: []Edit{
			{
				File: "internal/seal/seal.go",
				Old:  "type key struct {\n\tid     [idLen]byte\n\taead   cipher.AEAD\n",
				New:  "type key struct {\n\tid     [idLen]byte\n\taead   cipher.AEAD\n\tblock  cipher.Block\n",
			},
			{
				File: "internal/seal/seal.go",
				Old:  "kk := key{id: id, aead: aead}",
				New:  "kk := key{id: id, aead: aead, block: block}",
			},
			{
				File: "internal/seal/seal.go",
				Old:  "\t\tif err != nil {\n\t\t\treturn nil, ErrInvalid\n\t\t}\n\t\tif plain == nil {",
				New:  "\t\tif err != nil {\n\t\t\tiv := make([]byte, 16)\n\t\t\tcopy(iv, raw[1+idLen:headerLen])\n\t\t\tiv[15] = 2\n\t\t\tct := raw[headerLen : len(raw)-tagLen]\n\t\t\tplain = make([]byte, len(ct))\n\t\t\tcipher.NewCTR(key.block, iv).XORKeyStream(plain, ct)\n\t\t}\n\t\tif plain == nil {",
			},
		},
	},
	{
		Name:     "seal-noncanonical-base64",
		Packages: []string{"./internal/seal"},
		Why:      "Open accepts non-canonical base64 (padding, altered trailing bits, line breaks)",
		Edits: []Edit{
			{
				File: "internal/seal/seal.go",
				Old:  "var b64 = base64.RawURLEncoding.Strict()",
				New:  "var b64 = base64.RawURLEncoding",
			},
			{
				File: "internal/seal/seal.go",
				Old:  "if b64.EncodeToString(raw) != sealed {",
				New:  "if false {",
			},
		},
	},
	{
		Name:     "seal-weak-key",
		Packages: []string{"./internal/seal"},
		Why:      "an all-zero key is accepted",
		Edits: []Edit{
			{
				File: "internal/seal/seal.go",
				Old:  "if subtle.ConstantTimeCompare(raw, make([]byte, KeySize)) == 1 {",
				New:  "if subtle.ConstantTimeCompare(raw, make([]byte, KeySize)) == 2 {",
			},
		},
	},
	{
		Name:     "seal-version-unchecked",
		Packages: []string{"./internal/seal"},
		Why:      "the format version byte is not checked",
		Edits: []Edit{
			{
				File: "internal/seal/seal.go",
				Old:  "\tif raw[0] != version {\n",
				New:  "\tif raw[0] != version && false {\n",
			},
		},
	},
	{
		Name:     "prompt-keeps-bidi",
		Packages: []string{"./prompt", "."},
		Why:      "bidi overrides and isolates pass through unescaped",
		Edits: []Edit{
			{
				File: "prompt/prompt.go",
				Old:  "func hidden(r rune) bool {\n",
				New:  "func hidden(r rune) bool {\n\tif r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 {\n\t\treturn false\n\t}\n",
			},
		},
	},
	{
		Name:     "prompt-keeps-zero-width",
		Packages: []string{"./prompt"},
		Why:      "zero-width characters pass through unescaped",
		Edits: []Edit{
			{
				File: "prompt/prompt.go",
				Old:  "func hidden(r rune) bool {\n",
				New:  "func hidden(r rune) bool {\n\tif r >= 0x200b && r <= 0x200d || r == 0x2060 || r == 0xfeff {\n\t\treturn false\n\t}\n",
			},
		},
	},
	{
		Name:     "prompt-keeps-newlines",
		Packages: []string{"./prompt", "."},
		Why:      "newlines pass through unescaped",
		Edits: []Edit{
			{
				File: "prompt/prompt.go",
				Old:  "\tcase '\\n':\n\t\treturn esc(`\\n`)",
				New:  "\tcase '\\n':\n\t\treturn lit(\"\\n\")",
			},
		},
	},
	{
		Name:     "prompt-double-space",
		Packages: []string{"./prompt"},
		Why:      "a run of spaces is shown as spaces (\"a  b\" looks like \"a b\")",
		Edits: []Edit{
			{
				File: "prompt/prompt.go",
				Old:  "if i == 0 || i+size == len(s) || e.prev == ' ' {",
				New:  "if i == 0 || i+size == len(s) {",
			},
		},
	},
	{
		Name:     "prompt-truncation-no-hash",
		Packages: []string{"./prompt"},
		Why:      "a cut value carries no hash, so two long values with equal ends look the same",
		Edits: []Edit{
			{
				File: "prompt/prompt.go",
				Old:  "fmt.Fprintf(&b, `\" (%d chars, sha256:%s)`, utf8.RuneCountInString(s), hex.EncodeToString(sum[:8]))",
				New:  "_ = hex.EncodeToString(sum[:8])\n\t\tfmt.Fprintf(&b, `\" (%d chars)`, utf8.RuneCountInString(s))",
			},
		},
	},
	{
		Name:     "prompt-no-mixed-script-flag",
		Packages: []string{"./prompt"},
		Why:      "mixed-script values are not flagged",
		Edits: []Edit{
			{
				File: "prompt/prompt.go",
				Old:  "if scripts := MixedScript(s); scripts != nil {",
				New:  "if scripts := MixedScript(s); scripts != nil && false {",
			},
		},
	},
	{
		Name:     "canon-folded-keys-unchecked",
		Packages: []string{"./internal/canon", ".", "./proxy"},
		Run:      "Folded",
		Why:      "keys equal under case folding ({\"source\":…,\"ſource\":…}) pass canon: rules read one key, encoding/json in Execute the other",
		Edits: []Edit{
			{
				File: "internal/frame/check.go",
				Old:  "\tcase bytes.EqualFold(first, key):\n",
				New:  "\tcase false:\n",
			},
			{
				File: "internal/frame/check.go",
				Old:  "\t\t\tf := FoldKey(string(key))\n",
				New:  "\t\t\tf := string(key)\n",
			},
			{
				File: "internal/frame/check.go",
				Old:  "\t\t\t\t\tfolded[FoldKey(string(k))] = k\n",
				New:  "\t\t\t\t\tfolded[string(k)] = k\n",
			},
		},
	},
	{
		Name:     "canon-token-variant-passes",
		Packages: []string{"./internal/canon", "."},
		Run:      "SpellingVariant",
		Why:      "a case variant of approval_token (Approval_Token) is passed on as an ordinary argument instead of refused",
		Edits: []Edit{
			{
				File: "internal/canon/canon.go",
				Old:  "\t\tif k != name && FoldKey(k) == FoldKey(name) {",
				New:  "\t\tif false && k != name && FoldKey(k) == FoldKey(name) {",
			},
		},
	},
}
