package approvals

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseRequire(t *testing.T) {
	got, err := ParseRequire([]string{"drop_table=2", "delete_file=1"})
	if err != nil || got["drop_table"] != 2 || got["delete_file"] != 1 || len(got) != 2 {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, bad := range []string{"drop_table", "=2", "drop_table=0", "drop_table=-1", "drop_table=two", "drop_table=02", "drop_table=+2", " drop_table=2", "drop_table=2.0"} {
		if _, err := ParseRequire([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := ParseRequire([]string{"t=2", "t=3"}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("duplicate tool: %v", err)
	}
}

func TestLoadApproversFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		return p
	}
	ha, hb := mustHash(t, "alice-token-0123456789"), mustHash(t, "bob-token-0123456789ab")
	good := "# approvers\nalice:" + ha + "\n\n  bob:" + hb + "  \n"
	list, err := LoadApproversFile(write("good", good, 0o600))
	if err != nil || len(list) != 2 || list[1].Name != "bob" || list[1].Hash != hb || list[1].Token != "" {
		t.Fatalf("got %+v, %v", list, err)
	}
	for name, tc := range map[string]struct {
		content string
		mode    os.FileMode
		msg     string
	}{
		"world readable": {good, 0o644, "must not be readable"},
		"group readable": {good, 0o640, "must not be readable"},
		"no colon":       {"alice alice-token-0123456789\n", 0o600, "want name:token"},
		"plain text":     {"alice:alice-token-0123456789\n", 0o600, "plain-text password"},
		"bad hash":       {"alice:$argon2id$v=19$m=1,t=1,p=1$AAAA$AAAA\n", 0o600, "argon2id"},
		"duplicate":      {"alice:" + ha + "\nAlice:" + hb + "\n", 0o600, "listed twice"},
		"bad name":       {"<alice>:" + ha + "\n", 0o600, "approver name"},
		"empty":          {"# nobody\n", 0o600, "no approvers"},
	} {
		if _, err := LoadApproversFile(write(name, tc.content, tc.mode)); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %q", name, err, tc.msg)
		}
	}
}
