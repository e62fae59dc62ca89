//go:build !darwin && !windows

package approvalpage

// platformOpener is xdg-open (freedesktop.org) on the launcher's address.
func platformOpener(l *Launcher) []string { return []string{"xdg-open", l.URL()} }
