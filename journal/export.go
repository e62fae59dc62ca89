package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Export formats.
const (
	FormatJSONL = "jsonl" // the journal's own lines
	FormatOCSF  = "ocsf"  // OCSF 1.x API Activity events (class 6003)
)

// Export writes the journal at path for a SIEM. It verifies the whole
// journal first (chain and head file, as VerifyFile; every segment of a
// rotated journal, in order) and writes nothing if that fails: a damaged
// journal must not be shipped as if it were intact.
//
// Arguments pass through Redact again on the way out, so a record that
// somehow holds a secret in clear (a journal written by an older version,
// or edited) does not leak it. In FormatJSONL a line whose redacted copy is
// unchanged is written byte for byte, so the export verifies as a journal;
// a line that had to be redacted again is re-encoded (and then breaks the
// chain at that line, which is the honest result).
func Export(w io.Writer, path, format string, opts ...SetOption) (Summary, error) {
	if format != FormatJSONL && format != FormatOCSF {
		return Summary{}, fmt.Errorf("journal: unknown export format %q (jsonl or ocsf)", format)
	}
	sum, err := VerifyFile(path, opts...)
	if err != nil {
		return sum, err
	}
	names, err := SetFiles(path)
	if err != nil {
		return sum, err
	}
	// Every file of a verified set ends in a newline, so the files read
	// one after the other are the journal's lines in order.
	var readers []io.Reader
	for _, name := range names {
		f, err := os.Open(name)
		if errors.Is(err, os.ErrNotExist) && name == path && len(names) > 1 {
			continue // a crash mid-rotation: the set ends with its last segment
		}
		if err != nil {
			return sum, fmt.Errorf("journal: %w", err)
		}
		defer f.Close()
		readers = append(readers, f)
	}
	bw := bufio.NewWriter(w)
	lr := &lineReader{br: bufio.NewReaderSize(io.MultiReader(readers...), 64<<10)}
	for n := 0; n < sum.Records; n++ {
		raw, _, _, _, err := lr.next()
		if err != nil {
			return sum, fmt.Errorf("journal: reading line %d: %w", n+1, err)
		}
		rec, err := parseLine(raw)
		if err != nil {
			return sum, fmt.Errorf("journal: line %d: %w", n+1, err)
		}
		clean := Redact(rec.Args, nil)
		changed := !bytes.Equal(clean, rec.Args)
		rec.Args = clean
		var out []byte
		switch {
		case format == FormatOCSF:
			out, err = json.Marshal(ocsfEvent(&rec))
		case changed:
			out, err = json.Marshal(&rec)
		default:
			out = raw
		}
		if err != nil {
			return sum, fmt.Errorf("journal: line %d: %w", n+1, err)
		}
		bw.Write(out)
		bw.WriteByte('\n')
	}
	return sum, bw.Flush()
}

// ExportFile is Export to a new file (never overwriting one).
func ExportFile(out, path, format string, opts ...SetOption) (Summary, error) {
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return Summary{}, fmt.Errorf("journal: %w", err)
	}
	sum, err := Export(f, path, format, opts...)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(out)
	}
	return sum, err
}

// ocsfEvent maps a record to an OCSF API Activity event: the tool is the
// API operation, the principal the actor, the decision the status, and the
// journal's own fields (seq, prev, call, decision, by, digest, redacted
// arguments) go under unmapped so that nothing is lost.
func ocsfEvent(r *Record) map[string]any {
	status, statusID := "Unknown", 0
	switch {
	case approval(r.Decision) || r.Decision == Executed:
		status, statusID = "Success", 1
	case r.Decision == Ambiguous || r.Decision == Recovered || r.Decision == Redeeming:
		status, statusID = "Other", 99
	default: // refused, declined, cancelled, timeout, failed
		status, statusID = "Failure", 2
	}
	detail := r.Reason
	if r.Error != "" {
		detail = r.Error
	}
	ev := map[string]any{
		"class_uid":     6003,
		"class_name":    "API Activity",
		"category_uid":  6,
		"category_name": "Application Activity",
		"activity_id":   99,
		"activity_name": r.Decision,
		"type_uid":      600399,
		"severity_id":   1,
		"time":          r.Time.UnixMilli(),
		"status":        status,
		"status_id":     statusID,
		"message":       r.Summary,
		"api":           map[string]any{"operation": r.Tool},
		"metadata": map[string]any{
			"version": "1.3.0",
			"uid":     fmt.Sprintf("%d", r.Seq),
			"product": map[string]any{"name": "mcpsafe", "vendor_name": "mcpsafe"},
		},
		"unmapped": map[string]any{
			"seq": r.Seq, "prev": r.Prev, "call": r.Call, "decision": r.Decision, "by": r.By,
			"args_digest": r.ArgsDigest, "args": r.Args, "session": r.Session,
		},
	}
	if r.Principal != "" {
		ev["actor"] = map[string]any{"user": map[string]any{"name": r.Principal}}
	}
	if detail != "" {
		ev["status_detail"] = detail
	}
	return ev
}
