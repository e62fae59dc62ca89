//go:build !linux

package safefs

// FS is unavailable off Linux: the confinement relies on openat2 with
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, fstatat, unlinkat and renameat2.
type FS struct{}

// New always fails off Linux with ErrUnsupported.
func New(roots ...string) (*FS, error) { return nil, ErrUnsupported }

func (f *FS) Close() error                            { return nil }
func (f *FS) Roots() []string                         { return nil }
func (f *FS) Inspect(string) (Info, error)            { return Info{}, ErrUnsupported }
func (f *FS) Remove(string, Info) error               { return ErrUnsupported }
func (f *FS) Move(string, string, Info) error         { return ErrUnsupported }
func (f *FS) CheckDestination(string) (string, error) { return "", ErrUnsupported }
func (f *FS) Stat(string) (Entry, Info, error)        { return Entry{}, Info{}, ErrUnsupported }
func (f *FS) List(string) ([]Entry, error)            { return nil, ErrUnsupported }
func (f *FS) Covers(string) bool                      { return true }
