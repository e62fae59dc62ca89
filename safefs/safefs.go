package safefs

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"
)

// Sentinel errors. Every error returned by this package wraps one or more of
// them with detail, so callers map errors with errors.Is. Remove and Move
// wrap ErrChanged together with the specific cause (ErrSymlink, ErrNotFound,
// ErrNotRegular) whenever the target on disk is no longer the one described
// by the Info the caller approved: check ErrChanged first on those paths.
var (
	// ErrOutsideRoots: the path does not lie under any root, lexically,
	// after cleaning (.., other absolute paths, /proc/self/root tricks,
	// sibling directories sharing a name prefix with a root).
	ErrOutsideRoots = errors.New("path is outside the allowed roots")
	// ErrNotRegular: the target exists but is not a regular file (a
	// directory, including a root itself, a FIFO, a socket, a device).
	ErrNotRegular = errors.New("not a regular file")
	// ErrNotDir: List was asked for something that is not a directory.
	ErrNotDir = errors.New("not a directory")
	// ErrSymlink: a symbolic link (or a /proc magic link) was met on the
	// path, in any component including the last. It is never followed, so
	// where it points is never known.
	ErrSymlink = errors.New("path goes through a symbolic link")
	// ErrNotFound: the path, or one of its directories, does not exist.
	ErrNotFound = errors.New("no such file or directory")
	// ErrChanged: the target is no longer exactly the file that was
	// inspected (identity, type, size, times, link count or content differ).
	ErrChanged = errors.New("target changed since it was inspected")
	// ErrExists: a move destination already exists; nothing is overwritten.
	ErrExists = errors.New("destination already exists")
	// ErrCrossDevice: source and destination of a move are on different
	// file systems (or mounts), so the move cannot be a single atomic rename.
	ErrCrossDevice = errors.New("source and destination are on different file systems")
	// ErrRaceLost: in the window between the last check and the unlink
	// (or rename), another process put a different entry under the name,
	// and THAT entry was removed (or moved) instead; the approved file was
	// not. Detected afterwards through the open descriptor, so it is
	// reported, not prevented. Everything involved lies in the same
	// directory inside the root. Not an ErrChanged: something did happen.
	ErrRaceLost = errors.New("lost a race with a concurrent rename: a different entry was acted on")
	// ErrInvalidPath: empty, contains a NUL byte, or is not valid UTF-8.
	ErrInvalidPath = errors.New("invalid path")
	// ErrClosed: the FS was closed.
	ErrClosed = errors.New("safefs: closed")
	// ErrUnsupported: the platform, kernel or file system lacks the
	// primitives this package relies on (openat2 on Linux, a rename that
	// never replaces, or any implementation at all on this system).
	ErrUnsupported = errors.New("safefs: unsupported platform or kernel")
)

// Content hashing. A file of at most fullHashLimit bytes is hashed whole.
// A larger one is hashed by a sampled scheme (see hashScheme docs in the
// package comment): SHA-256 over a domain label, the size, the first and
// the last sampleSize bytes. Vars, not consts, so tests can shrink them.
var (
	fullHashLimit int64 = 64 << 20
	sampleSize    int64 = 4 << 20
)

// Hash scheme labels reported in Info.HashScheme.
const (
	HashFull    = "sha256"
	HashSampled = "sha256-first-last-4MiB-v1"
)

// Info describes one regular file as found by Inspect. The fields from Dev
// to SHA256 are the file's identity and state; Remove and Move compare all
// of them (see Info.Diff) against the file on disk right before acting.
type Info struct {
	Root string // the root the file lies under, as given to New (cleaned, absolute)
	Path string // Root joined with Rel: the resolved absolute path
	Rel  string // path relative to Root, slash separated, never containing ".."

	Dev     uint64
	Ino     uint64
	Mode    fs.FileMode // type and permission bits
	Size    int64
	ModTime time.Time
	// ChangeTime is the inode change time (ctime). User space cannot set
	// it: every write, truncate, chmod, link, or utimes that restores the
	// mtime moves it. It is what makes the sampled hash of large files
	// enough (see the package comment).
	ChangeTime time.Time
	Nlink      uint64

	SHA256      string // lowercase hex; see HashScheme
	HashScheme  string // HashFull or HashSampled
	HashedBytes int64  // how many content bytes went into SHA256
}

// Diff lists the names of the identity and state fields that differ between
// i and j, in a fixed order; nil means the same file in the same state.
// Times are compared as Unix nanoseconds so that a round trip through JSON
// or another time zone does not matter.
func (i Info) Diff(j Info) []string {
	var d []string
	add := func(diff bool, name string) {
		if diff {
			d = append(d, name)
		}
	}
	add(i.Path != j.Path, "path")
	add(i.Dev != j.Dev, "device")
	add(i.Ino != j.Ino, "inode")
	add(i.Mode.Type() != j.Mode.Type(), "type")
	add(i.Mode.Perm() != j.Mode.Perm() || i.Mode&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != j.Mode&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky), "mode")
	add(i.Size != j.Size, "size")
	add(i.ModTime.UnixNano() != j.ModTime.UnixNano(), "mtime")
	add(i.ChangeTime.UnixNano() != j.ChangeTime.UnixNano(), "ctime")
	add(i.Nlink != j.Nlink, "nlink")
	add(i.HashScheme != j.HashScheme || i.HashedBytes != j.HashedBytes, "hash_scheme")
	add(i.SHA256 != j.SHA256, "sha256")
	return d
}

// Entry is one directory entry as seen without following symlinks.
type Entry struct {
	Name    string
	Type    string // "file", "dir", "symlink" or "other"
	Mode    fs.FileMode
	Size    int64
	ModTime time.Time
}

// Entry types.
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
	TypeOther   = "other"
)

func entryType(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return TypeFile
	case m.IsDir():
		return TypeDir
	case m&fs.ModeSymlink != 0:
		return TypeSymlink
	default:
		return TypeOther
	}
}

// checkPath refuses strings that must never reach a system call: the
// kernel would truncate at a NUL, and invalid UTF-8 cannot be shown to the
// human faithfully.
func checkPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%w: empty", ErrInvalidPath)
	case strings.IndexByte(p, 0) >= 0:
		return fmt.Errorf("%w: contains a NUL byte", ErrInvalidPath)
	case !utf8.ValidString(p):
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidPath)
	}
	return nil
}

// within reports whether clean absolute path p is root or lies under it,
// with a separator boundary: /x/workspace-evil is not under /x/workspace.
// It returns p relative to root ("." for root itself). The comparison is
// exact, byte for byte: on a case-insensitive or Unicode-normalizing
// volume another spelling of a root is refused as outside (fail closed;
// Covers compares identities instead).
func within(root, p string) (string, bool) {
	if p == root {
		return ".", true
	}
	prefix := root
	if !strings.HasSuffix(prefix, sep) {
		prefix += sep
	}
	if !strings.HasPrefix(p, prefix) {
		return "", false
	}
	return p[len(prefix):], true
}

const sep = string(filepath.Separator)

// lexicalResolve maps an agent-supplied path to (root index, rel) without
// touching the file system. Absolute paths must lie under a root after
// filepath.Clean; if roots nest, the deepest root wins. Relative paths are
// resolved against the first root, and may not climb out of it. The
// platform's name traps (names.go) are refused first.
func lexicalResolve(roots []string, p string) (int, string, error) {
	if err := checkPath(p); err != nil {
		return 0, "", err
	}
	if err := pathTrap(p); err != nil {
		return 0, "", err
	}
	return lexicalWithin(roots, p)
}

// lexicalWithin is lexicalResolve without the name traps (Covers, which
// must answer for any host path, uses it).
func lexicalWithin(roots []string, p string) (int, string, error) {
	if !filepath.IsAbs(p) {
		if filepath.VolumeName(p) != "" || filepath.Separator == '\\' && (p[0] == '\\' || p[0] == '/') {
			// Windows: a drive-relative (C:x) or rooted (\x) path is
			// neither absolute nor relative to the root.
			return 0, "", fmt.Errorf("%w: %q is relative to a drive or the current drive's root", ErrOutsideRoots, p)
		}
		rel := filepath.Clean(p)
		if rel == ".." || strings.HasPrefix(rel, ".."+sep) {
			return 0, "", fmt.Errorf("%w: %q climbs out of %s", ErrOutsideRoots, p, roots[0])
		}
		return 0, rel, nil
	}
	c := filepath.Clean(p)
	best, bestRel := -1, ""
	for i, r := range roots {
		if rel, ok := within(r, c); ok && (best < 0 || len(r) > len(roots[best])) {
			best, bestRel = i, rel
		}
	}
	if best < 0 {
		return 0, "", fmt.Errorf("%w: %q", ErrOutsideRoots, p)
	}
	return best, bestRel, nil
}

// joinRoot builds the absolute path shown to people for rel under root.
func joinRoot(root, rel string) string {
	if rel == "." {
		return root
	}
	return filepath.Join(root, rel)
}
