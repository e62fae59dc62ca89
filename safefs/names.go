package safefs

import (
	"fmt"
	"runtime"
	"strings"
)

// Name traps: path strings that a platform's file system reads as
// something other than a plain name inside the root, refused before
// anything looks at the disk (so before any prompt: previews call Inspect
// or CheckDestination first).
//
// Which rules apply where. The Windows rules apply on Windows, the macOS
// rules on macOS, and neither on Linux. On Linux a colon, a trailing dot
// or "~1" is an ordinary character of an ordinary name ("12:00.log" is a
// common file name there), and the kernel gives them no second meaning,
// so refusing them would break honest use and protect nothing. Both rule
// sets are plain Go, tested on every platform (names_test.go).
//
// What is refused and why:
//
// Windows (windowsTrap):
//   - \\?\ and \\.\ (and \??\) prefixes: they switch off path parsing or
//     name a device.
//   - UNC paths (\\server\share, //server/share): another machine.
//   - drive-relative (C:x) and rooted (\x) paths: relative to a per-drive
//     working directory, or to the current drive, not to a root.
//   - a colon anywhere past the drive letter: an alternate data stream
//     (a.txt:hidden, a.txt::$DATA) is a second file behind a name.
//   - reserved device names as any component, with or without an
//     extension or trailing spaces, any case: CON, PRN, AUX, NUL, COM0-9,
//     LPT0-9, the superscript-digit forms COM¹ COM² COM³ LPT¹ LPT² LPT³,
//     CONIN$ and CONOUT$ (a.txt under NUL.txt is the null device).
//   - a trailing dot or space in any component: Win32 strips them, so
//     "a.txt." and "a.txt " are other spellings of "a.txt".
//   - an 8.3 short-name form ("~" then digits, at the end of the name or
//     before the extension: PROGRA~1, REPORT~12.TXT): it may alias a long
//     name with a different spelling. Refused rather than resolved: what
//     the human approves is then the only spelling that is acted on.
//   - wildcard and reserved characters < > " | ? * and control characters.
//
// macOS (darwinTrap):
//   - a component "..namedfork": a.txt/..namedfork/rsrc is the resource
//     fork of a.txt, a second stream behind the name.
//   - a component starting with "._": AppleDouble files, in which macOS
//     keeps the resource fork and extended attributes of the file with
//     the rest of the name on volumes without native support.
//
// Case and Unicode normalization (macOS and Windows volumes are usually
// case-insensitive, and APFS and HFS+ treat NFC and NFD spellings of a
// name as one file) are not string rules: names are never compared as
// strings to decide anything about the disk. A path must spell its root
// exactly (another spelling is refused as outside the roots), a move
// destination is looked up on disk (ErrExists for any spelling of an
// existing file), and identities (device and inode, or volume serial and
// file ID) are compared on open handles; Covers compares directories by
// identity (os.SameFile).
var (
	pathTrap = platformTrap(runtime.GOOS)
	rootTrap = platformRootTrap(runtime.GOOS)
)

func platformTrap(goos string) func(string) error {
	switch goos {
	case "windows":
		return windowsTrap
	case "darwin", "ios":
		return darwinTrap
	}
	return func(string) error { return nil }
}

func platformRootTrap(goos string) func(string) error {
	if goos == "windows" {
		return windowsTrap
	}
	return func(string) error { return nil }
}

func trap(p, why string) error {
	return fmt.Errorf("%w: %q: %s", ErrInvalidPath, p, why)
}

func isSlash(c byte) bool { return c == '\\' || c == '/' }

// windowsTrap refuses the Windows path traps listed above. It accepts
// plain relative paths and drive-absolute paths (C:\x).
func windowsTrap(p string) error {
	switch {
	case len(p) >= 4 && isSlash(p[0]) && isSlash(p[1]) && (p[2] == '?' || p[2] == '.') && isSlash(p[3]):
		return trap(p, `a \\?\ or \\.\ path (raw or device namespace)`)
	case len(p) >= 4 && isSlash(p[0]) && p[1] == '?' && p[2] == '?' && isSlash(p[3]):
		return trap(p, `an NT \??\ path`)
	case len(p) >= 2 && isSlash(p[0]) && isSlash(p[1]):
		return trap(p, "a UNC path (another machine or share)")
	case len(p) >= 1 && isSlash(p[0]):
		return trap(p, "rooted on the current drive; give the full path with its drive letter, or a path relative to the root")
	}
	rest := p
	if len(p) >= 2 && p[1] == ':' && isLetter(p[0]) {
		if len(p) == 2 || !isSlash(p[2]) {
			return trap(p, "relative to the working directory of drive "+p[:2]+"; give C:\\ and the full path")
		}
		rest = p[3:]
	}
	for _, c := range strings.FieldsFunc(rest, func(r rune) bool { return r == '\\' || r == '/' }) {
		if err := windowsName(p, c); err != nil {
			return err
		}
	}
	return nil
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// windowsName checks one component.
func windowsName(p, c string) error {
	if c == "." || c == ".." {
		return nil
	}
	for i := 0; i < len(c); i++ {
		switch b := c[i]; {
		case b == ':':
			return trap(p, "an alternate data stream (a colon in a name)")
		case b < 32, strings.IndexByte(`<>"|?*`, b) >= 0:
			return trap(p, fmt.Sprintf("the character %q is reserved on Windows", b))
		}
	}
	if last := c[len(c)-1]; last == '.' || last == ' ' {
		return trap(p, "a name ending in a dot or space (Windows strips it: another spelling of a different name)")
	}
	base := c
	if i := strings.IndexByte(base, '.'); i >= 0 {
		base = base[:i]
	}
	base = strings.TrimRight(base, " ")
	if isDeviceName(base) {
		return trap(p, fmt.Sprintf("%q is a reserved device name on Windows", c))
	}
	if isShortName(c) {
		return trap(p, "an 8.3 short name (~ and digits), which may alias a long name; give the long name")
	}
	return nil
}

func isDeviceName(base string) bool {
	u := strings.ToUpper(base)
	switch u {
	case "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$":
		return true
	}
	if len(u) < 4 || (u[:3] != "COM" && u[:3] != "LPT") {
		return false
	}
	switch u[3:] {
	case "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "¹", "²", "³":
		return true
	}
	return false
}

// isShortName: "~" followed by one or more digits, then the end of the
// name or a dot (the 8.3 form Windows generates: PROGRA~1, REPORT~12.TXT).
func isShortName(c string) bool {
	for i := 0; i < len(c); i++ {
		if c[i] != '~' {
			continue
		}
		j := i + 1
		for j < len(c) && c[j] >= '0' && c[j] <= '9' {
			j++
		}
		if j > i+1 && (j == len(c) || c[j] == '.') {
			return true
		}
	}
	return false
}

// darwinTrap refuses the macOS traps listed above.
func darwinTrap(p string) error {
	for _, c := range strings.Split(p, "/") {
		switch {
		case strings.EqualFold(c, "..namedfork"):
			return trap(p, "a ..namedfork path (the resource fork behind a name)")
		case strings.HasPrefix(c, "._"):
			return trap(p, "an AppleDouble ._ file (the resource fork and attributes of another file)")
		}
	}
	return nil
}
