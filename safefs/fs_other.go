//go:build !linux && !darwin && !windows

package safefs

// FS is unavailable where neither implementation exists (not Linux, macOS
// or Windows): the confinement needs per-component no-follow lookups,
// and no layer for this system has been written and reviewed.
type FS struct{}

// New always fails here with ErrUnsupported.
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
