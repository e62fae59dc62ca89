package journal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// LongValueBytes is the length past which a string argument is not kept
// in the journal by default: a whole write_file content, a document, an
// encoded blob. Its place in the redacted copy of the arguments takes
// {"sha256": "<hex of the value's UTF-8 bytes>", "bytes": N}: what was
// written can be checked against it (sha256sum), and the journal does not
// become a second copy of every file a tool wrote. Paths, names, commands
// and short messages are kept as they are. WithKeepLongValues(true) keeps
// them all.
const LongValueBytes = 1 << 10

// WithKeepLongValues(true) keeps string arguments over LongValueBytes in
// the journal as they are (redacted by name like every argument, and
// within MaxArgsBytes). By default each is replaced by its SHA-256 and
// size (LongValueBytes).
func WithKeepLongValues(keep bool) Option {
	return func(o *options) { o.keepLong = keep }
}

// digestLongValues returns args (already redacted) with every string value
// over max bytes, at any depth, replaced by {"sha256", "bytes"}. Keys,
// order and every other value are kept. Input it cannot read comes back as
// the note Redact gives it.
func digestLongValues(args json.RawMessage, max int) json.RawMessage {
	if len(args) <= max {
		return args // no string in it can be longer
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var out bytes.Buffer
	if err := digestValue(dec, &out, max); err != nil {
		return json.RawMessage(`"[unparseable]"`)
	}
	return json.RawMessage(out.Bytes())
}

func digestValue(dec *json.Decoder, out *bytes.Buffer, max int) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		open, end := byte('['), byte(']')
		if t == '{' {
			open, end = '{', '}'
		}
		out.WriteByte(open)
		for i := 0; dec.More(); i++ {
			if i > 0 {
				out.WriteByte(',')
			}
			if t == '{' {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ := kt.(string)
				writeJSON(out, key)
				out.WriteByte(':')
			}
			if err := digestValue(dec, out, max); err != nil {
				return err
			}
		}
		out.WriteByte(end)
		_, err := dec.Token() // the closing delimiter
		return err
	case json.Number:
		out.WriteString(t.String())
	case string:
		if len(t) > max {
			sum := sha256.Sum256([]byte(t))
			b, _ := json.Marshal(struct {
				SHA256 string `json:"sha256"`
				Bytes  int    `json:"bytes"`
			}{hex.EncodeToString(sum[:]), len(t)})
			out.Write(b)
			return nil
		}
		writeJSON(out, t)
	default: // bool, nil
		writeJSON(out, t)
	}
	return nil
}
