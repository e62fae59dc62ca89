package journal

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/mcpsafe/mcpsafe/prompt"
)

// RedactedValue replaces the value of every sensitive field.
const RedactedValue = "[redacted]"

// sensitiveParts make a field sensitive wherever they occur in its
// lowercased name: none is a common part of an innocent word, and
// redacting a harmless field only costs readability, while missing a
// secret leaks it for good.
var sensitiveParts = []string{
	"password", "passwd", "passphrase", "secret", "token",
	"authorization", "cookie", "credential", "bearer", "session",
}

// sensitiveWords make a field sensitive when they are a whole word of its
// name: as parts they would hit innocent words (spinner, footprint).
var sensitiveWords = map[string]bool{"auth": true, "pin": true, "otp": true}

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
//     cookie, credential, bearer or session (ignoring case), or
//   - has the word "auth", "pin" or "otp", or a word that is "key"/"keys" or ends in it
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
		if sensitiveWords[w] {
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

// Secrets are the values of one call's sensitive fields (the fields Redact
// hides), ready to be cut out of free text such as a plan. A tool's preview
// may copy an argument into its summary; redacting by field name cannot
// reach that copy, so the plan is redacted by value.
type Secrets struct {
	r *strings.Replacer
}

// FindSecrets collects the values of args' sensitive fields, at any depth,
// with the same rule as Redact (extra names, common names). A string is
// taken as it is; a number as its literal; an object or array under a
// sensitive name as its compact JSON and every string and number inside
// it. Booleans and null are not secrets. Each value is also taken in the
// forms a plan shows it in: JSON-escaped, Go-quoted (%q), and rendered by
// prompt.Quote (whole and cut), so that a preview that quotes a secret
// does not leak it either.
//
// Not covered: a secret transformed before display (encoded, hashed,
// split, cut at another length), and a secret copied into an argument
// whose name is not sensitive.
func FindSecrets(args json.RawMessage, extra []string) Secrets {
	var vals []string
	if len(args) > 0 && json.Valid(args) {
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.UseNumber()
		_ = collectSecrets(dec, extra, false, &vals)
	}
	seen := map[string]bool{}
	var forms []string
	add := func(f string) {
		if f != "" && !seen[f] {
			seen[f] = true
			forms = append(forms, f)
		}
	}
	for _, v := range vals {
		add(v)
		j, _ := json.Marshal(v)
		add(string(j[1 : len(j)-1]))
		q := strconv.Quote(v)
		add(q[1 : len(q)-1])
		add(quotedInner(prompt.QuoteWhole(v)))
		// A value cut by prompt.Quote is followed by its length and a
		// SHA-256 prefix, which would let a short password be guessed
		// offline: the whole rendering goes.
		add(prompt.Quote(v))
		add(quotedInner(prompt.Quote(v)))
	}
	if len(forms) == 0 {
		return Secrets{}
	}
	// Longest first: the replacer tries its pairs in order, and a secret
	// that contains another must be cut whole.
	slices.SortStableFunc(forms, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, RedactedValue)
	}
	return Secrets{r: strings.NewReplacer(pairs...)}
}

// quotedInner is what prompt.Quote shows between its quotes: a raw double
// quote never occurs inside, so the last one closes the value (a script
// flag may follow it).
func quotedInner(q string) string {
	end := strings.LastIndexByte(q, '"')
	if end <= 0 {
		return ""
	}
	return q[1:end]
}

// Empty reports whether no secret was found.
func (s Secrets) Empty() bool { return s.r == nil }

// Text returns t with every occurrence of a secret replaced by
// "[redacted]".
func (s Secrets) Text(t string) string {
	if s.r == nil {
		return t
	}
	return s.r.Replace(t)
}

// collectSecrets walks one value; under is true below a sensitive name.
func collectSecrets(dec *json.Decoder, extra []string, under bool, out *[]string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		for dec.More() {
			if t == '{' {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ := kt.(string)
				if !under && sensitiveName(key, extra) {
					var raw json.RawMessage
					if err := dec.Decode(&raw); err != nil {
						return err
					}
					var b bytes.Buffer
					if json.Compact(&b, raw) == nil && (b.Len() > 0 && (b.Bytes()[0] == '{' || b.Bytes()[0] == '[')) {
						*out = append(*out, b.String())
					}
					sub := json.NewDecoder(bytes.NewReader(raw))
					sub.UseNumber()
					if err := collectSecrets(sub, extra, true, out); err != nil {
						return err
					}
					continue
				}
			}
			if err := collectSecrets(dec, extra, under, out); err != nil {
				return err
			}
		}
		_, err := dec.Token()
		return err
	case json.Number:
		if under {
			*out = append(*out, t.String())
		}
	case string:
		if under {
			*out = append(*out, t)
		}
	}
	return nil
}
