//go:build darwin

package approvalpage

// platformOpener is open(1) on the launcher file: it opens in the
// application for .html files, the default browser unless the person
// chose another.
func platformOpener(l *Launcher) []string { return []string{"/usr/bin/open", l.Path} }
