package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"
)

// AmbiguousMarker flags, in Show's table, a call that was approved but whose
// outcome is unknown.
const AmbiguousMarker = "!! AMBIGUOUS: check by hand"

// Filter selects the records Show prints. Zero values select everything.
type Filter struct {
	Tool  string    // exact tool name
	Since time.Time // records at or after this instant
}

const (
	summaryWidth = 60
	detailWidth  = 48
	nameWidth    = 32
)

// Show prints the journal read from r as an aligned table for a person,
// then a footer counting ambiguous calls. It verifies the chain while
// reading: records before a broken line are printed, followed by a warning,
// and the verification error is returned. Every value from the journal is
// rendered on one line with control and format characters escaped, so a
// tool name or summary cannot forge rows or drive the terminal.
func Show(w io.Writer, r io.Reader, f Filter) error {
	return show(w, func(each func(int, *Record)) (Summary, error) {
		res, err := scan(r, each)
		return res.sum, err
	}, f)
}

// ShowFile is Show on the journal at path, also held against its head file
// (see HeadSuffix) as VerifyFile is. A rotated journal is shown whole, its
// sealed segments first (see Segments).
func ShowFile(w io.Writer, path string, f Filter, opts ...SetOption) error {
	if _, err := os.Stat(path); err != nil {
		if segs, _ := Segments(path); len(segs) == 0 {
			return fmt.Errorf("journal: %w", err)
		}
	}
	head, err := ReadHead(path)
	if err != nil {
		fmt.Fprintf(w, "!! JOURNAL NOT INTACT: %s\n", oneLine(err.Error(), 0))
		return err
	}
	return show(w, func(each func(int, *Record)) (Summary, error) {
		s, err := readSet(path, nil, head, setOpts(opts), each)
		if s == nil {
			return Summary{}, err
		}
		return s.res.sum, err
	}, f)
}

func show(w io.Writer, read func(each func(int, *Record)) (Summary, error), f Filter) error {
	type row struct {
		ord int
		rec Record
	}
	var rows []row
	sum, verr := read(func(ord int, rec *Record) {
		rec.Args = nil // not shown; no need to hold it
		rows = append(rows, row{ord, *rec})
	})
	// A line named by a TamperError may already have been read as good
	// (its edit shows only in the next line's prev): never print it.
	var te *TamperError
	if errors.As(verr, &te) {
		for len(rows) > 0 && rows[len(rows)-1].ord >= te.ord {
			rows = rows[:len(rows)-1]
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME (UTC)\tTOOL\tPRINCIPAL\tDECISION\tBY / REASON\tSUMMARY\t")
	shown, ambShown, ambHidden := 0, 0, 0
	var ambSeqs []string
	for i := range rows {
		rec := &rows[i].rec
		match := (f.Tool == "" || rec.Tool == f.Tool) && (f.Since.IsZero() || !rec.Time.Before(f.Since))
		if !match {
			if rec.Decision == Ambiguous {
				ambHidden++
			}
			continue
		}
		shown++
		flag := ""
		if rec.Decision == Ambiguous {
			ambShown++
			flag = AmbiguousMarker
			ambSeqs = append(ambSeqs, strconv.FormatUint(rec.Seq, 10))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			rec.Seq,
			rec.Time.UTC().Format("2006-01-02 15:04:05"),
			oneLine(rec.Tool, nameWidth),
			oneLine(rec.Principal, nameWidth),
			oneLine(rec.Decision, nameWidth),
			oneLine(detail(rec), detailWidth),
			oneLine(rec.Summary, summaryWidth),
			flag)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	fmt.Fprintf(w, "%d of %d records shown.\n", shown, len(rows))
	if sum.FirstSeq > 1 && verr == nil {
		fmt.Fprintf(w, "Pruned: seq 1..%d are no longer in the journal (their segments were deleted).\n", sum.FirstSeq-1)
	}
	if ambShown > 0 {
		fmt.Fprintf(w, "!! %d AMBIGUOUS call(s): approved, outcome unknown (the server stopped before recording it); check by hand whether they ran: seq %s\n",
			ambShown, strings.Join(ambSeqs, ", "))
	}
	if ambHidden > 0 {
		fmt.Fprintf(w, "!! %d more AMBIGUOUS call(s) outside the filter.\n", ambHidden)
	}
	if n := sum.Unresolved; n > 0 && verr == nil {
		fmt.Fprintf(w, "%d approved call(s) without an outcome yet: in flight, or the server stopped (its next start marks them ambiguous).\n", n)
	}
	var torn *TornError
	switch {
	case verr == nil:
	case errors.As(verr, &torn):
		fmt.Fprintf(w, "!! final line %d%s is torn (a crash mid-write); the server cuts it and records the cut at its next start.\n", torn.Line, inFile(torn.File))
	default:
		fmt.Fprintf(w, "!! JOURNAL NOT INTACT: %s\n", oneLine(verr.Error(), 0))
	}
	return verr
}

func detail(rec *Record) string {
	parts := make([]string, 0, 3)
	for _, p := range []string{rec.By, rec.Reason} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if rec.Grant != "" {
		parts = append(parts, "grant "+rec.Grant)
	}
	if rec.Error != "" {
		parts = append(parts, "error: "+rec.Error)
	}
	switch rec.Assurance {
	case "local_page":
		parts = append(parts, "assurance local page (a click on the server's own approval page)")
	case "channel":
		parts = append(parts, "assurance channel"+paths(rec.Evidence))
	case "passkey":
		parts = append(parts, "assurance passkey"+credentials(rec.Evidence))
	}
	return strings.Join(parts, "; ")
}

// paths names the ways the approvers decided when the approval service's
// signed statement says (its "via": "slack" for a click in Slack, "web"
// for its page or API), e.g. " via slack". Display only, like credentials.
func paths(evidence []byte) string {
	var ev struct {
		Statement struct {
			Approvers []string `json:"approvers"`
			Via       []string `json:"via"`
		} `json:"statement"`
	}
	if json.Unmarshal(evidence, &ev) != nil || len(ev.Statement.Via) == 0 || len(ev.Statement.Via) != len(ev.Statement.Approvers) {
		return ""
	}
	var each []string
	for i, a := range ev.Statement.Approvers {
		each = append(each, a+" via "+ev.Statement.Via[i])
	}
	return " (" + strings.Join(each, ", ") + ")"
}

// credentials names the passkeys in an approval's evidence (the approval
// service's signed statement, or the local approval page's one proof),
// for a person reading the journal. It is display only: `mcpsafe journal
// verify --service-key --passkeys` checks the service's.
func credentials(evidence []byte) string {
	type proof struct {
		Approver     string `json:"approver"`
		CredentialID string `json:"credential_id"`
	}
	var ev struct {
		Statement struct {
			Passkeys []proof `json:"passkeys"`
		} `json:"statement"`
		proof
	}
	if json.Unmarshal(evidence, &ev) != nil {
		return ""
	}
	if len(ev.Statement.Passkeys) == 0 && ev.Approver != "" && ev.CredentialID != "" {
		ev.Statement.Passkeys = []proof{ev.proof} // the local page's
	}
	if len(ev.Statement.Passkeys) == 0 {
		return ""
	}
	var ids []string
	for _, p := range ev.Statement.Passkeys {
		id := p.CredentialID
		if len(id) > 8 { // enough to tell an approver's keys apart by eye
			id = id[:8]
		}
		ids = append(ids, p.Approver+":"+id)
	}
	return " [" + strings.Join(ids, " ") + "]"
}

// oneLine renders an untrusted string on one line: invalid UTF-8, control
// characters (newline, tab, ESC...) and invisible format characters (bidi
// overrides, zero-width) become visible escapes; then it is cut to max
// runes (0: no limit) with an ellipsis.
func oneLine(s string, max int) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		var piece string
		switch {
		case r == utf8.RuneError && size == 1:
			piece = fmt.Sprintf(`\x%02x`, s[i])
		case r < 0x80 && (r < 0x20 || r == 0x7f):
			piece = fmt.Sprintf(`\x%02x`, r)
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029':
			piece = fmt.Sprintf(`\u%04x`, r)
		default:
			piece = s[i : i+size]
		}
		i += size
		if max > 0 && n+utf8.RuneCountInString(piece) > max-1 && i < len(s) {
			b.WriteString("…")
			return b.String()
		}
		b.WriteString(piece)
		n += utf8.RuneCountInString(piece)
	}
	return b.String()
}

// ParseSince reads a --since value: an RFC 3339 instant, a date
// (YYYY-MM-DD, its start in UTC, the zone the journal is shown in), or a
// positive duration back from now ("90m", "24h", or whole days like "7d").
func ParseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseUint(days, 10, 16)
		if err != nil {
			return time.Time{}, fmt.Errorf("journal: --since %q: not RFC 3339, a date (YYYY-MM-DD), a duration or a number of days", s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return time.Time{}, fmt.Errorf("journal: --since %q: not RFC 3339, a date (YYYY-MM-DD), a duration or a number of days", s)
		}
	}
	if d <= 0 {
		return time.Time{}, fmt.Errorf("journal: --since %q: the duration must be positive", s)
	}
	return now.Add(-d), nil
}

func inFile(name string) string {
	if name == "" {
		return ""
	}
	return " of " + oneLine(name, 0)
}
