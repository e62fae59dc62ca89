package frame

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// needReaders: on CI a missing Node is a failure; elsewhere the recorded
// readings (TestRecordedReadings) stand in for the missing interpreter.
func needReaders(tb testing.TB) (js, py *interp) {
	js, py, err := readers()
	if err != nil {
		tb.Fatal(err)
	}
	if os.Getenv("CI") == "true" && (js == nil || py == nil) {
		tb.Fatalf("CI=true: the JavaScript and Python readers are required (node: %q)", nodePath())
	}
	return js, py
}

// differ checks an Alike frame's reading against every parser's and
// returns what differs, or "".
func differ(frame []byte, f Frame, js, py *interp) string {
	want := frameReading(f)
	if got := goReading(frame); !sameReading(got, want) {
		return fmt.Sprintf("encoding/json reads %+v, the reader %+v", got.normal(), want)
	}
	kind, id, method, err := sdkReading(frame)
	if err != nil || kind != want.Kind || !sameReading(reading{ID: id}, reading{ID: want.ID}) || method != want.Method {
		return fmt.Sprintf("the SDK reads %s %v %q (%v), the reader %+v", kind, id, method, err, want)
	}
	for _, p := range []*interp{js, py} {
		if p == nil {
			continue
		}
		got, err := p.read(frame)
		if err != nil {
			return err.Error()
		}
		if !sameReading(got, want) {
			return fmt.Sprintf("%s reads %+v, the reader %+v", p.name, got.normal(), want)
		}
	}
	return ""
}

// FuzzFrameReadsAlike: whenever the reader says a frame may pass raw,
// encoding/json, the SDK's decoder, JavaScript's JSON.parse and Python's
// json read the same kind, id, method, tool, progress token and member
// names from it.
func FuzzFrameReadsAlike(f *testing.F) {
	for _, s := range seedFrames {
		f.Add([]byte(s))
	}
	js, py := needReaders(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		if why := grammarDiffers(b); why != "" {
			t.Fatalf("%q: %s", b, why)
		}
		fr := Read(b)
		if !fr.Alike {
			return
		}
		if why := differ(b, fr, js, py); why != "" {
			t.Fatalf("%q passes raw, but %s", b, why)
		}
		if why := spliceDiffers(b, fr, js, py); why != "" {
			t.Fatalf("%q: %s", b, why)
		}
	})
}

// spliceDiffers checks what the relays do to a frame that passes raw (the
// stateful HTTP lane: id, then progress token; the stdio lane: a gateway
// tool name): spliced to other plain values it still reads alike to every
// parser (differ), as the same kind of message with the new values and
// the other members Read reports as they were.
func spliceDiffers(b []byte, fr Frame, js, py *interp) string {
	type edit struct {
		what  string
		part  func(Frame) []byte
		with  string
		field func(Frame) string // the value Read reports for it
	}
	id := edit{"id", func(f Frame) []byte { return f.Top["id"] }, `"mcpsafe-sdk-lane-1"`, func(f Frame) string { return f.ID }}
	metaToken := edit{"progress token", func(f Frame) []byte { return f.Meta["progressToken"] }, `"mcpsafe-sdk-lane-1"`, func(f Frame) string { return f.Progress }}
	tool := edit{"tool name", func(f Frame) []byte { return f.Params["name"] }, `"upstream_name"`, func(f Frame) string { return `"` + f.Tool + `"` }}
	var plans [][]edit
	if fr.ID != "" {
		plans = append(plans, []edit{id})
	}
	if _, ok := fr.Meta["progressToken"]; ok && fr.Kind == Request {
		plans = append(plans, []edit{metaToken}, []edit{id, metaToken})
	}
	if _, ok := fr.Params["progressToken"]; ok && fr.Kind == Notification && fr.Method == "notifications/progress" {
		plans = append(plans, []edit{{"progress token", func(f Frame) []byte { return f.Params["progressToken"] }, `7`, func(f Frame) string { return f.Progress }}})
	}
	if fr.Tool != "" {
		plans = append(plans, []edit{tool})
	}
	for _, plan := range plans {
		out, g := b, fr
		for _, e := range plan {
			var ok bool
			if out, ok = Splice(nil, out, e.part(g), []byte(e.with)); !ok {
				return "Splice refused the " + e.what + " Read found"
			}
			if g = Read(out); !g.Alike {
				return fmt.Sprintf("with its %s spliced it no longer reads alike: %q (%s)", e.what, out, g.Why)
			}
			if e.field(g) != e.with {
				return fmt.Sprintf("with its %s spliced Read reports %s", e.what, e.field(g))
			}
		}
		// What the plan did not touch reads as before.
		for _, e := range []edit{id, metaToken, tool} {
			if !slices.ContainsFunc(plan, func(p edit) bool { return p.what == e.what }) && e.field(g) != e.field(fr) {
				return fmt.Sprintf("splicing %v changed the %s: %s, was %s", plan[0].what, e.what, e.field(g), e.field(fr))
			}
		}
		if g.Kind != fr.Kind || g.Method != fr.Method {
			return fmt.Sprintf("spliced, it reads as a %v %q", g.Kind, g.Method)
		}
		if why := differ(out, g, js, py); why != "" {
			return fmt.Sprintf("spliced to %q, %s", out, why)
		}
	}
	return ""
}

// grammarDiffers compares Check's reading of the grammar with
// encoding/json's (json.Valid and utf8.Valid): Check accepts only JSON,
// and refuses JSON as invalid only for a lone surrogate escape (it may
// report a duplicate key it met before a grammar error).
func grammarDiffers(b []byte) string {
	err := Check(b, Rules{MaxDepth: 10000})
	var e *Error
	if errors.As(err, &e) && (e.Kind == ErrTooDeep || strings.HasPrefix(e.Detail, "a lone surrogate")) {
		return ""
	}
	valid := utf8.Valid(b) && json.Valid(b)
	switch {
	case err == nil && !valid:
		return "Check accepts what encoding/json does not read as JSON"
	case valid && e != nil && e.Kind == ErrInvalid:
		return fmt.Sprintf("Check refuses JSON that encoding/json reads: %v", err)
	}
	return ""
}

var update = flag.Bool("update-readings", false, "record the JavaScript and Python readings of the seed frames in testdata/readings.json and write the fuzz seeds")

type recorded struct {
	Frame      string  `json:"frame"` // base64
	JavaScript reading `json:"javascript"`
	Python     reading `json:"python"`
}

const readingsFile = "testdata/readings.json"

// TestRecordedReadings compares the reader with the recorded JavaScript
// and Python readings of every seed frame (so the differential holds where
// the interpreters are missing), and, where they are present, the
// recording with what they say today.
func TestRecordedReadings(t *testing.T) {
	js, py := needReaders(t)
	if *update {
		if js == nil || py == nil {
			t.Fatal("recording needs node and python3")
		}
		writeRecordings(t, js, py)
	}
	raw, err := os.ReadFile(readingsFile)
	if err != nil {
		t.Fatal(err)
	}
	var recs []recorded
	if err := json.Unmarshal(raw, &recs); err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(seedFrames) {
		t.Fatalf("%d recorded readings for %d seed frames: run go test -run TestRecordedReadings -update-readings", len(recs), len(seedFrames))
	}
	alike := 0
	for i, rec := range recs {
		frame, _ := base64.StdEncoding.DecodeString(rec.Frame)
		if !bytes.Equal(frame, []byte(seedFrames[i])) {
			t.Fatalf("recorded frame %d is not seed %d: run with -update-readings", i, i)
		}
		for _, live := range []*interp{js, py} {
			if live == nil {
				continue
			}
			want := rec.JavaScript
			if live == py {
				want = rec.Python
			}
			got, err := live.read(frame)
			if err != nil {
				t.Fatal(err)
			}
			if !sameReading(got, want) || got.OK != want.OK {
				t.Errorf("%s reads %q as %+v today, recorded %+v", live.name, frame, got, want)
			}
		}
		f := Read(frame)
		if !f.Alike {
			continue
		}
		alike++
		want := frameReading(f)
		for name, got := range map[string]reading{"javascript": rec.JavaScript, "python": rec.Python} {
			if !sameReading(got, want) {
				t.Errorf("%q passes raw, but %s read %+v and the reader %+v", frame, name, got.normal(), want)
			}
		}
		if why := differ(frame, f, nil, nil); why != "" {
			t.Errorf("%q passes raw, but %s", frame, why)
		}
	}
	if alike == 0 || alike == len(recs) {
		t.Fatalf("%d of %d seeds pass raw: the corpus lacks controls or attacks", alike, len(recs))
	}
}

func writeRecordings(t *testing.T, js, py *interp) {
	var recs []recorded
	for _, s := range seedFrames {
		j, err := js.read([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		p, err := py.read([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, recorded{Frame: base64.StdEncoding.EncodeToString([]byte(s)), JavaScript: j, Python: p})
	}
	b, err := json.MarshalIndent(recs, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(readingsFile, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzFrameReadsAlike")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, s := range seedFrames {
		body := "go test fuzz v1\n[]byte(" + strconv.Quote(s) + ")\n"
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
