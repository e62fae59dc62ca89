package files_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/files"
)

// A delete plan leads with what a person checks: the file's name, its
// size in words, when it was modified in local time; the content
// fingerprint comes last. It holds no time relative to now, so it reads the
// same on every call (an approval service compares a re-attached request
// byte for byte).
func TestDeletePlanLeadsWithWhatAPersonChecks(t *testing.T) {
	f := newFixture(t, "decline")
	big := filepath.Join(f.root, "report.csv")
	must(t, os.WriteFile(big, []byte(strings.Repeat("x", 12*1024+300)), 0o644))
	mod := time.Now().Add(-5*time.Minute - 10*time.Second)
	must(t, os.Chtimes(big, mod, mod))
	f.call(t, files.DeleteFile, map[string]any{"path": "report.csv"})
	msg, _ := f.lastAsk.Load().(string)
	first := regexp.MustCompile(`(?m)^Plan: .*$`).FindString(msg)
	if first != `Plan: Delete "report.csv" (12.3 KB, modified `+mod.Local().Format("2006-01-02 15:04 MST")+`)` {
		t.Fatalf("the plan does not lead with name, size and age:\n%s", msg)
	}
	local := mod.Local().Format("2006-01-02 15:04:05 MST")
	size := strings.Index(msg, "Size: 12.3 KB (12588 bytes); modified "+local)
	print := strings.Index(msg, "Content fingerprint: ")
	if size < 0 || print < 0 || print < size || !regexp.MustCompile(`Content fingerprint: [0-9a-f]{12} `).MatchString(msg[print:]) {
		t.Fatalf("want the local modification time, then the fingerprint last:\n%s", msg)
	}
	if strings.Contains(msg, " ago") {
		t.Fatalf("the plan holds a time relative to now:\n%s", msg)
	}
	// Control: a small file reads in bytes.
	f.call(t, files.DeleteFile, map[string]any{"path": "cache.txt"})
	if msg, _ := f.lastAsk.Load().(string); !strings.Contains(msg, `Delete "cache.txt" (5 bytes, modified `) {
		t.Fatalf("a small file's plan:\n%s", msg)
	}
}
