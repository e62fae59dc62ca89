//go:build windows

package approvalpage

import (
	"os"
	"path/filepath"
)

// platformOpener is the URL handler of url.dll on the launcher file, run
// by rundll32 from the system directory (never one found on PATH). Not
// "cmd /c start": cmd re-parses its line, and a path with & or ^ would
// change meaning. The argument is a local path the server made (no
// quotes, no spaces beyond the temporary directory's own), and the link is
// not in it.
func platformOpener(l *Launcher) []string {
	root := os.Getenv("SystemRoot")
	if root == "" {
		root = `C:\Windows`
	}
	return []string{filepath.Join(root, "System32", "rundll32.exe"), "url.dll,FileProtocolHandler", l.Path}
}
