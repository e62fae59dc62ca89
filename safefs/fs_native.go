//go:build darwin || windows

package safefs

// FS is a set of root directories opened once. On macOS and Windows it is
// the portable implementation (portable.go) over the platform's calls
// (sys_unix.go with sys_darwin.go, or sys_windows.go); see the package
// comment for what each platform guarantees. It is safe for concurrent
// use; Close waits for operations in flight. The methods (Inspect,
// Remove, Move, CheckDestination, Stat, List, Covers, Roots, Close) have
// the contracts documented on the Linux FS.
type FS struct{ *portable }

// New opens the roots. Each must exist, be a directory, and not itself be
// a symbolic link or junction. Duplicate roots are refused.
func New(roots ...string) (*FS, error) {
	p, err := newPortable(nativeSys(), roots...)
	if err != nil {
		return nil, err
	}
	return &FS{p}, nil
}
