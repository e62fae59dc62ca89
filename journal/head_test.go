package journal

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

// The chain alone cannot see the end of the journal change: no later line
// carries the last line's hash. The head file can. Each attack below has a
// control that differs only in being what a crash or an older journal
// leaves behind.
func TestHeadCatchesTailEdits(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(t *testing.T, path string, lines [][]byte)
		kind string // "tamper", "torn" or "ok" from VerifyFile
		line int
		want string // in the error, or in the summary when kind is "ok"
	}{
		{"one byte changed in the last line", func(t *testing.T, p string, l [][]byte) {
			l[5] = bytes.Replace(l[5], []byte("c3.txt"), []byte("c4.txt"), 1)
			write(t, p, joinLines(l))
		}, "tamper", 6, "line 6 was edited"},
		{"last line removed", func(t *testing.T, p string, l [][]byte) {
			write(t, p, joinLines(l[:5]))
		}, "tamper", 6, "1 record(s) removed or cut from the end"},
		{"last three lines removed", func(t *testing.T, p string, l [][]byte) {
			write(t, p, joinLines(l[:3]))
		}, "tamper", 4, "the journal ends at seq 3 but its head file records seq 6"},
		{"every line removed", func(t *testing.T, p string, l [][]byte) {
			write(t, p, nil)
		}, "tamper", 1, "6 record(s) removed"},
		{"acknowledged last line cut to look torn", func(t *testing.T, p string, l [][]byte) {
			write(t, p, append(joinLines(l[:5]), l[5][:20]...))
		}, "tamper", 6, "removed or cut from the end"},
		{"acknowledged last line made invalid JSON", func(t *testing.T, p string, l [][]byte) {
			l[5] = l[5][:len(l[5])-1]
			write(t, p, joinLines(l))
		}, "tamper", 6, "removed or cut from the end"},
		{"head file damaged", func(t *testing.T, p string, l [][]byte) {
			write(t, p+HeadSuffix, []byte("{}"))
		}, "other", 0, "head file"},
		// Controls.
		{"control: untouched", func(*testing.T, string, [][]byte) {}, "ok", 0, "matches its head file (seq 6)"},
		{"control: a crash tore an unacknowledged line", func(t *testing.T, p string, l [][]byte) {
			write(t, p, append(joinLines(l), `{"seq":7,"pre`...))
		}, "torn", 7, "torn"},
		{"control: head lags after a crash between fsync and head update", func(t *testing.T, p string, l [][]byte) {
			write(t, p+HeadSuffix, Head{Seq: 5, Hash: hashLine(l[4])}.encode())
		}, "ok", 0, "matches its head file (seq 5)"},
		{"control: head lags, with its hint of where Open starts reading", func(t *testing.T, p string, l [][]byte) {
			write(t, p+HeadSuffix, Head{Seq: 5, Hash: hashLine(l[4]), Open: 5}.encode())
		}, "ok", 0, "matches its head file (seq 5)"},
		{"control: a journal from before head files", func(t *testing.T, p string, l [][]byte) {
			if err := os.Remove(p + HeadSuffix); err != nil {
				t.Fatal(err)
			}
		}, "ok", 0, "no head file"},
		{"control: empty head file left by a crash at creation", func(t *testing.T, p string, l [][]byte) {
			write(t, p+HeadSuffix, nil)
		}, "ok", 0, "no head file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, lines := sampleJournal(t)
			tc.edit(t, path, lines)
			sum, err := VerifyFile(path)
			var out bytes.Buffer
			serr := ShowFile(&out, path, Filter{})
			switch tc.kind {
			case "ok":
				if err != nil || serr != nil || !strings.Contains(sum.String(), tc.want) {
					t.Fatalf("verify %v, show %v, summary %q; want intact with %q", err, serr, sum, tc.want)
				}
			case "other":
				if err == nil || serr == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(out.String(), "NOT INTACT") {
					t.Fatalf("verify %v, show %v; want an error with %q", err, serr, tc.want)
				}
			default:
				wantErr(t, err, tc.kind, tc.line)
				wantErr(t, serr, tc.kind, tc.line)
				if !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("%v lacks %q", err, tc.want)
				}
			}
			// Open agrees: tampering refuses, a torn tail is cut and the
			// cut recorded, and the head then follows the chain again.
			j, oerr := Open(path)
			if tc.kind == "tamper" || tc.kind == "other" {
				if oerr == nil {
					j.Close()
					t.Fatal("Open accepted a journal whose tail was edited")
				}
				return
			}
			if oerr != nil {
				t.Fatal(oerr)
			}
			if err := j.Append(context.Background(), Record{Tool: "t", Decision: Refused}); err != nil {
				t.Fatal(err)
			}
			must(t, j.Close())
			if sum, err := VerifyFile(path); err != nil || sum.HeadSeq != sum.LastSeq {
				t.Fatalf("after reopening: %v, head at %d of %d", err, sum.HeadSeq, sum.LastSeq)
			}
		})
	}
}

// Verify on a plain reader has no head: the documented limit of the chain.
func TestVerifyReaderIgnoresHead(t *testing.T) {
	path, lines := sampleJournal(t)
	if _, err := Verify(bytes.NewReader(joinLines(lines[:5]))); err != nil {
		t.Fatalf("a prefix of a good journal: %v", err)
	}
	if sum, err := VerifyFile(path); err != nil || sum.HeadSeq != 6 {
		t.Fatalf("VerifyFile: %v, %+v", err, sum)
	}
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
