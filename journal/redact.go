package journal

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"
)

// RedactedValue replaces the value of every sensitive field.
const RedactedValue = "[redacted]"

// sensitiveParts make a field sensitive wherever they occur in its
// lowercased name: none is a common part of an innocent word, and
// redacting a harmless field only costs readability, while missing a
// secret leaks it for good.
var sensitiveParts = []string{
	"password", "passwd", "passphrase", "secret", "token",
	"authorization", "cookie", "credential", "bearer",
}

// notKeys are ordinary words that end in "key" without naming one.
var notKeys = map[string]bool{
	"monkey": true, "donkey": true, "turkey": true, "hockey": true,
	"jockey": true, "whiskey": true, "lackey": true, "hotkey": true,
	"turnkey": true,
}

// Redact returns a copy of args in which sensitive fields' values, at any
// depth, are "[redacted]". No field is removed: the copy shows every key the
// tool received. (The gate strips the top-level approval_token before it
// journals, and refuses its case variants; any other approval_token field
// is an ordinary argument, redacted for its name.) A field is sensitive
// when its name:
//   - equals one of extra (ignoring case), or
//   - contains password, passwd, passphrase, secret, token, authorization,
//     cookie, credential or bearer (ignoring case), or
//   - has the word "auth", or a word that is "key"/"keys" or ends in it
//     (apikey, api_key, privateKey, X-API-Key, sshKeys), where words are
//     split at non-letters, digits and camelCase humps. "keyboard" and
//     "keyword" are spared (the word does not end in key), as are the
//     everyday words in notKeys (monkey, turkey...); "sort_key" is not
//     (over-redaction is the safe side).
//
// Field order and duplicates are kept. Scalars and empty input come back as
// they are; input that is not valid JSON comes back as the JSON string
// "[unparseable]", never as the raw bytes.
func Redact(args json.RawMessage, extra []string) json.RawMessage {
	if len(args) == 0 {
		return nil
	}
	if !json.Valid(args) {
		return json.RawMessage(`"[unparseable]"`)
	}
	t := bytes.TrimLeft(args, " \t\r\n")
	if t[0] != '{' && t[0] != '[' {
		return args
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var out bytes.Buffer
	if err := redactValue(dec, &out, extra); err != nil {
		return json.RawMessage(`"[unparseable]"`)
	}
	return json.RawMessage(out.Bytes())
}

func redactValue(dec *json.Decoder, out *bytes.Buffer, extra []string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			out.WriteByte('[')
			for i := 0; dec.More(); i++ {
				if i > 0 {
					out.WriteByte(',')
				}
				if err := redactValue(dec, out, extra); err != nil {
					return err
				}
			}
			out.WriteByte(']')
		} else {
			out.WriteByte('{')
			n := 0
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ := kt.(string)
				hide := sensitiveName(key, extra)
				if hide {
					var skip json.RawMessage
					if err := dec.Decode(&skip); err != nil {
						return err
					}
				}
				if n > 0 {
					out.WriteByte(',')
				}
				n++
				writeJSON(out, key)
				out.WriteByte(':')
				if hide {
					writeJSON(out, RedactedValue)
					continue
				}
				if err := redactValue(dec, out, extra); err != nil {
					return err
				}
			}
			out.WriteByte('}')
		}
		_, err := dec.Token() // the closing delimiter
		return err
	case json.Number:
		out.WriteString(t.String())
	default: // string, bool, nil
		writeJSON(out, t)
	}
	return nil
}

func writeJSON(out *bytes.Buffer, v any) {
	b, _ := json.Marshal(v) // strings, bools and nil always encode
	out.Write(b)
}

func sensitiveName(name string, extra []string) bool {
	for _, e := range extra {
		if strings.EqualFold(name, e) {
			return true
		}
	}
	l := strings.ToLower(name)
	for _, p := range sensitiveParts {
		if strings.Contains(l, p) {
			return true
		}
	}
	for _, w := range words(name) {
		if w == "auth" {
			return true
		}
		stem := strings.TrimSuffix(w, "s")
		if strings.HasSuffix(stem, "key") && !notKeys[stem] {
			return true
		}
	}
	return false
}

// words splits a field name into lowercase words at non-alphanumerics,
// letter/digit changes and camelCase humps: "APIKey2" -> api, key, 2.
func words(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(s)
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			continue
		}
		if len(cur) > 0 {
			p := rs[i-1]
			switch {
			case unicode.IsDigit(r) != unicode.IsDigit(p):
				flush()
			case unicode.IsUpper(r) && unicode.IsLower(p):
				flush()
			case unicode.IsUpper(r) && unicode.IsUpper(p) && i+1 < len(rs) && unicode.IsLower(rs[i+1]):
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return out
}
