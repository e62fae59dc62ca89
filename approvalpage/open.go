package approvalpage

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// OpenBrowser opens link in the user's browser: the command in $BROWSER
// when set (its words, then the link; "%s" in it is replaced by the link
// instead), else the platform's opener. The link is an argument, never
// passed through a shell.
func OpenBrowser(link string) error {
	var argv []string
	if b := strings.TrimSpace(os.Getenv("BROWSER")); b != "" {
		// $BROWSER may list several commands separated by ':'; the first.
		first, _, _ := strings.Cut(b, ":")
		argv = strings.Fields(first)
		replaced := false
		for i, a := range argv {
			if strings.Contains(a, "%s") {
				argv[i], replaced = strings.ReplaceAll(a, "%s", link), true
			}
		}
		if !replaced {
			argv = append(argv, link)
		}
	} else {
		switch runtime.GOOS {
		case "darwin":
			argv = []string{"open", link}
		case "windows":
			argv = []string{"rundll32", "url.dll,FileProtocolHandler", link}
		default:
			argv = []string{"xdg-open", link}
		}
	}
	if len(argv) == 0 {
		return errors.New("approval page: $BROWSER is empty")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait() // a browser may keep running; reap it when it ends
	return nil
}
