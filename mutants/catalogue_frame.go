package mutants

// frameMutants break the frame reader's rule for what passes raw
// (internal/frame): each is killed by the reader's unit tests and the
// fuzz target's seed corpus, without the proxy.
var frameMutants = []Mutant{
	{
		Name:     "frame-extra-member",
		Packages: []string{"./internal/frame"},
		Run:      "TestReadRule|TestRecordedReadings|FuzzFrameReadsAlike",
		Why:      "the reader lets a frame with a member JSON-RPC does not have pass raw (an upstream may read \"Params\" or \"extra\" as its parameters)",
		Edits: []Edit{
			{
				File: "internal/frame/read.go",
				Old:  "if !allowed[k] {",
				New:  "if !allowed[k] && false {",
			},
		},
	},
	{
		Name:     "frame-lower-case-not-fold",
		Packages: []string{"./internal/frame"},
		Run:      "TestReadRule|TestCheckRules|TestRecordedReadings|FuzzFrameReadsAlike",
		Why:      "keys are compared lower-cased instead of under simple case folding, so \"ſource\" beside \"source\" (one field to encoding/json) passes",
		Edits: []Edit{
			{
				File: "internal/frame/check.go",
				Old:  "\tcase bytes.EqualFold(first, key):\n",
				New:  "\tcase bytes.Equal(bytes.ToLower(first), bytes.ToLower(key)):\n",
			},
		},
	},
	{
		Name:     "frame-lone-cr",
		Packages: []string{"./internal/frame"},
		Run:      "TestReadRule|TestRecordedReadings|FuzzFrameReadsAlike",
		Why:      "a frame with a carriage return that is not its line end passes raw (a line end to some readers)",
		Edits: []Edit{
			{
				File: "internal/frame/read.go",
				Old:  "if bytes.IndexByte(body, '\\r') >= 0 {",
				New:  "if bytes.IndexByte(body, '\\r') >= 0 && false {",
			},
		},
	},
	{
		Name:     "frame-keep-last-duplicate",
		Packages: []string{"./internal/frame"},
		Run:      "TestReadRule|TestCheckRules|TestRecordedReadings|FuzzFrameReadsAlike",
		Why:      "a duplicate key is read as encoding/json reads it (the last one kept) instead of refused",
		Edits: []Edit{
			{
				File: "internal/frame/check.go",
				Old:  "\tcase bytes.Equal(first, key):\n\t\treturn &Error{Kind: ErrDuplicate",
				New:  "\tcase bytes.Equal(first, key):\n\t\treturn nil\n\tcase false:\n\t\treturn &Error{Kind: ErrDuplicate",
			},
		},
	},
	{
		Name:     "frame-method-null",
		Packages: []string{"./internal/frame"},
		Run:      "TestReadRule|FuzzFrameReadsAlike",
		Why:      "\"method\":null is read as the method \"\" (encoding/json) while JavaScript and Python read no method (the fuzz target's first finding)",
		Edits: []Edit{
			{
				File: "internal/frame/read.go",
				Old:  "if m[0] != '\"' || json.Unmarshal(m, &f.Method) != nil {",
				New:  "if json.Unmarshal(m, &f.Method) != nil {",
			},
		},
	},
	{
		Name:     "frame-fold-exemption-too-wide",
		Packages: []string{"./internal/frame"},
		Run:      "TestReadRule|TestRecordedReadings|FuzzFrameReadsAlike",
		Why:      "keys equal under case folding pass anywhere in a result, not only inside structuredContent (a content item's \"text\" and \"Text\" are one field to encoding/json, and the SDK path drops one)",
		Edits: []Edit{
			{
				File: "internal/frame/read.go",
				Old:  "foldedKeys: k == \"structuredContent\"}",
				New:  "foldedKeys: k == k}",
			},
		},
	},
	{
		Name:     "upstream-unclear-answer-keeps-alias",
		Packages: []string{"./proxy"},
		Run:      "TestUpstreamAnswersByTheReader",
		Why:      "an upstream answer to the SDK client's own request that the reader does not pass raw reaches the SDK client under the proxy's alias id, so the SDK's request never completes",
		Edits: []Edit{
			{
				File: "proxy/fastlane.go",
				// Only the unclear path loses the alias (answer, shared
				// with the clear path, is left whole).
				Old: "\t\tif ok, err := u.answer(id, line, append(refused, '\\n')); ok {",
				New: "\t\tif _, sdk := u.sdkIDs[id]; sdk {\n\t\t\t_, err := u.sdkFeed.Write(line)\n\t\t\treturn err\n\t\t}\n\t\tif ok, err := u.answer(id, line, append(refused, '\\n')); ok {",
			},
		},
	},
}
