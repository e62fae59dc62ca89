// Package safefs is the root-confined, symlink-free, identity-checked file
// layer under `mcpsafe files`. It knows nothing about MCP.
//
// # Threat model
//
// The agent chooses path strings; other processes may change the file tree
// at any moment, including between a human's approval and its execution,
// and may win any race that is winnable. The roots are chosen by the
// operator at startup and trusted (their ancestors may be symlinks; a root
// itself may not). The goals: (1) no operation ever reads, removes or
// renames anything outside the roots; (2) a Remove or Move acts only on the
// file the human approved, in the state it was approved in; (3) malformed
// input is a clean refusal.
//
// # What is checked where
//
//   - New: each root exists, is a directory, is not a symlink (Lstat), and
//     is opened once (O_DIRECTORY|O_NOFOLLOW); the fd's inode must match the
//     Lstat. openat2 is probed so a kernel without it is a startup error.
//   - Every call, lexically: the path is non-empty, NUL-free, valid UTF-8.
//     Absolute paths are filepath.Clean'ed and must equal a root or start
//     with root+"/" (so /x/workspace-evil is not in /x/workspace; and
//     /proc/self/root/x/workspace/f is outside). Relative paths resolve
//     against the FIRST root and may not start with "..". After this, the
//     relative part has no ".." component at all. Cleaning is lexical: a/../b
//     is b even if a is a symlink, and f/ is f. The cleaned path is what
//     Info.Path reports (for the human) and what is acted on; no symlink is
//     ever followed to give .. a different meaning.
//   - Every call, in the kernel: the parent directory is opened with
//     openat2(rootfd, dir, RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|
//     RESOLVE_NO_MAGICLINKS), so a symlink or magic link in ANY directory
//     component, even one pointing back inside, fails with ErrSymlink, and
//     nothing can climb out of the root. The last component is examined with
//     fstatat(parentfd, name, AT_SYMLINK_NOFOLLOW) and opened with openat2
//     from the parent fd plus O_NOFOLLOW|O_NONBLOCK|O_NOCTTY. os.Root is not
//     used: it follows symlinks that stay inside the root.
//   - Inspect: the type is checked before opening (directories, FIFOs,
//     sockets, devices: ErrNotRegular; a symlink: ErrSymlink), the open fd
//     must be the inode fstatat saw, the content is hashed through that fd,
//     and the fd is fstat'ed again after hashing (size, mtime, ctime, nlink,
//     mode unchanged, else ErrChanged).
//   - Remove / Move: the whole Inspect is redone from the root fd and the
//     result must equal the approved Info in path, device, inode, type,
//     mode, size, mtime, ctime, link count and digest (Info.Diff); then a
//     last fstat of the open fd and fstatat of (parentfd, name) right before
//     unlinkat(parentfd, name, 0) or renameat2(..., RENAME_NOREPLACE) on the
//     same parent fd. Every failure there matches ErrChanged.
//
// # Content digest
//
// Files up to 64 MiB are hashed whole with SHA-256 (HashFull). Larger files
// use HashSampled: SHA-256 over a domain label, the size, the first 4 MiB
// and the last 4 MiB (8 MiB read, bounded time for previews of multi-GB
// files). That is enough because the digest is never the only binding:
// device+inode pin the file, and size, mtime and ctime pin its state. Any
// write(2), truncate, mmap store or fallocate moves mtime and ctime; a
// utimensat that puts the mtime back moves ctime, which user space cannot
// set. Changing the middle of a large file without changing ctime needs
// raw block-device access or changing the system clock, i.e. privileges
// beyond the threat model. The sampled part catches what a stale or coarse
// timestamp on some file systems could miss at the ends (headers, appends).
//
// # The race that remains
//
// Linux has no "unlink this name only if it is inode X" system call. Remove
// therefore renames the verified name to a fresh random name in the same
// directory (renameat2 RENAME_NOREPLACE on the parent fd), checks that the
// entry now under the random name is the approved inode, and unlinks the
// random name; a different entry swapped in under the original name just
// before the rename is renamed back and nothing is deleted (ErrChanged).
// Move checks the inode that arrived at the destination and moves a
// swapped-in entry back the same way. What remains is the window between
// the check of the random name and its unlink, two adjacent system calls:
// a process that learns the random name in that window (inotify, readdir)
// and renames another entry over it has that entry unlinked instead. It
// cannot reach outside the root: the parent fd was reached without any
// symlink and stays the same directory; unlinkat and renameat2 act on the
// directory entry itself and never follow a symlink (a swapped-in symlink
// is unlinked or moved, its target untouched); unlinkat with flags 0
// refuses a directory. And it is not silent: the open descriptor shows that
// the approved file kept its link, so Remove returns ErrRaceLost, never
// nil, and the journal cannot record a deletion that did not happen. A
// second, minor window: between fstatat and open of the last component a
// device node could be swapped in and opened (never read; the inode check
// refuses it); this needs mknod rights inside the root.
// TestRaceSwapTarget and TestRaceSwapParent run thousands of trials of these
// swaps against a symlink to outside and check outside files byte for byte.
//
// # Symlinks and errors
//
// ErrSymlink is returned for a symlink anywhere on the path. Its target is
// never read, so where it points is unknown; callers should report it as
// outside the roots. Remove and Move wrap every mismatch in ErrChanged as
// well as the specific cause, so the execute path can report target_changed.
//
// # Platforms: two implementations, one set of rules
//
// On Linux, FS is the openat2 implementation above (fs_linux.go). On macOS
// and Windows, FS is the portable implementation (portable.go): the same
// checks in the same order, over a thin per-OS layer (sysOps) that opens
// ONE name at a time relative to an open directory handle and never
// follows a link: openat with O_NOFOLLOW (and O_NOFOLLOW_ANY), fstatat
// AT_SYMLINK_NOFOLLOW, unlinkat and renameatx_np(RENAME_EXCL) on macOS
// (sys_unix.go, sys_darwin.go); NtCreateFile with RootDirectory,
// FILE_OPEN_REPARSE_POINT and OBJ_DONT_REPARSE, GetFileInformationByHandle
// for identity (volume serial and file index), and delete and rename BY
// THE VERIFIED HANDLE (FileDispositionInfoEx with POSIX semantics,
// FileRenameInformationEx relative to the destination directory's handle,
// never replacing) on Windows (sys_windows.go). Every reparse point
// (symlink, junction, mount point, placeholder) counts as a symlink. On
// Windows the delete and move windows described above do not exist: the
// handle that was verified is the one deleted or renamed.
//
// The tests run every conformance and attack test against both
// implementations on Linux (the portable one over Linux's openat, fstatat,
// unlinkat and renameat2), so the macOS and Windows logic is exercised in
// every run; only their system-call layers are not (docs/TESTING.md).
//
// Name traps (names.go) are refused lexically, before any lookup: on
// Windows, \\?\ and \\.\ prefixes, UNC, drive-relative and rooted paths,
// alternate data streams, reserved device names, trailing dots and
// spaces, 8.3 short names and wildcard characters; on macOS, ..namedfork
// and ._ AppleDouble names. They apply on the platform that gives those
// names a second meaning and nowhere else: on Linux a colon or "~1" is an
// ordinary character, and refusing it would break honest names while
// protecting nothing. Case and Unicode-normalization aliases are never
// decided by comparing strings: roots must be spelled exactly, the file
// system answers whether a destination exists, and identities are
// compared on open handles.
//
// os.Root (Go 1.26) is used on no platform: it follows symlinks that stay
// inside the root (the approved path could then name a different file than
// the one shown), its Rename replaces an existing destination, and it
// exposes neither the directory handle nor a way to delete the handle that
// was verified.
//
// Other systems: New returns ErrUnsupported.
package safefs
