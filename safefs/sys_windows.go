package safefs

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// winSys is the system-call layer on Windows. Every lookup is one name
// relative to an open directory handle (NtCreateFile with RootDirectory,
// as os.Root does), opened with FILE_OPEN_REPARSE_POINT, so a symlink,
// junction, mount point or any other reparse point is opened as itself
// and then refused by its attribute, and with OBJ_DONT_REPARSE, so the
// object manager follows none either. Identity is the volume serial
// number and the 64-bit file index from GetFileInformationByHandle, read
// from the open handle. Remove and Move act on the verified handle itself
// (handleOps): FileDispositionInformationEx with POSIX semantics, and
// FileRenameInformationEx relative to the destination directory's handle
// without FILE_RENAME_REPLACE_IF_EXISTS, so an existing destination is
// never replaced. Untested at run time (see docs/TESTING.md): written
// against the Win32 and NT documentation of these calls.
type winSys struct{}

func nativeSys() sysOps { return winSys{} }

// fileRenameInformationEx is FILE_INFORMATION_CLASS 65 (not yet named in
// golang.org/x/sys/windows); FileRenameInformation (10) is the fallback
// on systems before Windows 10 1709.
const fileRenameInformationEx = 65

const (
	shareAll   = windows.FILE_SHARE_READ | windows.FILE_SHARE_WRITE | windows.FILE_SHARE_DELETE
	dirAccess  = windows.FILE_LIST_DIRECTORY | windows.FILE_TRAVERSE | windows.FILE_READ_ATTRIBUTES | windows.SYNCHRONIZE
	fileAccess = windows.FILE_GENERIC_READ | windows.DELETE | windows.SYNCHRONIZE
)

// errReparse: the name is a reparse point (symlink, junction, ...).
var errReparse = errors.New("a reparse point (symbolic link, junction or mount point)")

func (winSys) openRoot(abs string) (handle, error) {
	p, err := windows.UTF16PtrFromString(abs)
	if err != nil {
		return 0, err
	}
	h, err := windows.CreateFile(p, dirAccess, shareAll, nil, windows.OPEN_EXISTING,
		windows.FILE_FLAG_BACKUP_SEMANTICS|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	if err != nil {
		return 0, err
	}
	if err := notReparse(h); err != nil {
		windows.CloseHandle(h)
		return 0, err
	}
	return handle(h), nil
}

// ntOpen opens name (one component; "." is the directory itself)
// relative to dir without following any reparse point.
func ntOpen(dir handle, name string, access, options uint32) (windows.Handle, error) {
	if name == "." {
		name = ""
	}
	objName, err := windows.NewNTUnicodeString(name)
	if err != nil {
		return 0, err
	}
	oa := windows.OBJECT_ATTRIBUTES{
		Length:        uint32(unsafe.Sizeof(windows.OBJECT_ATTRIBUTES{})),
		RootDirectory: windows.Handle(dir),
		ObjectName:    objName,
		Attributes:    windows.OBJ_DONT_REPARSE,
	}
	var iosb windows.IO_STATUS_BLOCK
	var h windows.Handle
	err = windows.NtCreateFile(&h, access|windows.SYNCHRONIZE, &oa, &iosb, nil, 0, shareAll, windows.FILE_OPEN,
		options|windows.FILE_OPEN_REPARSE_POINT|windows.FILE_SYNCHRONOUS_IO_NONALERT, 0, 0)
	if err != nil {
		return 0, err
	}
	return h, nil
}

// notReparse refuses a handle that was opened on a reparse point itself.
func notReparse(h windows.Handle) error {
	var bi windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &bi); err != nil {
		return err
	}
	if bi.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0 {
		return errReparse
	}
	return nil
}

func (winSys) openDir(dir handle, name string) (handle, error) {
	h, err := ntOpen(dir, name, dirAccess, windows.FILE_DIRECTORY_FILE)
	if err != nil {
		return 0, err
	}
	if err := notReparse(h); err != nil {
		windows.CloseHandle(h)
		return 0, err
	}
	return handle(h), nil
}

// openFile asks for DELETE access too, so that Remove and Move can act on
// this very handle. A file another program holds open without
// FILE_SHARE_DELETE is therefore refused (a sharing violation), even for
// a preview: it could not be removed or moved anyway.
func (winSys) openFile(dir handle, name string) (handle, error) {
	h, err := ntOpen(dir, name, fileAccess, windows.FILE_NON_DIRECTORY_FILE)
	if err != nil {
		return 0, err
	}
	if err := notReparse(h); err != nil {
		windows.CloseHandle(h)
		return 0, err
	}
	return handle(h), nil
}

func filetime(ticks int64) time.Time {
	ft := windows.Filetime{LowDateTime: uint32(ticks), HighDateTime: uint32(uint64(ticks) >> 32)}
	return time.Unix(0, ft.Nanoseconds())
}

func (winSys) fstat(h handle) (fileStat, error) {
	var bi windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(windows.Handle(h), &bi); err != nil {
		return fileStat{}, err
	}
	// FILE_BASIC_INFO: CreationTime, LastAccessTime, LastWriteTime,
	// ChangeTime (LARGE_INTEGER each), FileAttributes, padding.
	var basic [5]uint64
	if err := windows.GetFileInformationByHandleEx(windows.Handle(h), windows.FileBasicInfo,
		(*byte)(unsafe.Pointer(&basic[0])), uint32(unsafe.Sizeof(basic))); err != nil {
		return fileStat{}, err
	}
	a := bi.FileAttributes
	var m fs.FileMode
	switch {
	case a&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0:
		m = fs.ModeSymlink | 0o777
	case a&windows.FILE_ATTRIBUTE_DIRECTORY != 0:
		m = fs.ModeDir | 0o777
	case a&windows.FILE_ATTRIBUTE_DEVICE != 0:
		m = fs.ModeDevice | 0o666
	default:
		m = 0o666
	}
	if a&windows.FILE_ATTRIBUTE_READONLY != 0 && m.IsRegular() {
		m &^= 0o222
	}
	return fileStat{
		dev:   uint64(bi.VolumeSerialNumber),
		ino:   uint64(bi.FileIndexHigh)<<32 | uint64(bi.FileIndexLow),
		mode:  m,
		size:  int64(bi.FileSizeHigh)<<32 | int64(bi.FileSizeLow),
		mtime: time.Unix(0, bi.LastWriteTime.Nanoseconds()),
		ctime: filetime(int64(basic[3])),
		nlink: uint64(bi.NumberOfLinks),
	}, nil
}

func (s winSys) statAt(dir handle, name string) (fileStat, error) {
	h, err := ntOpen(dir, name, windows.FILE_READ_ATTRIBUTES, 0)
	if err != nil {
		return fileStat{}, err
	}
	defer windows.CloseHandle(h)
	return s.fstat(handle(h))
}

// readAt is ReadFile with the offset in an OVERLAPPED on a synchronous
// handle: it reads at that offset and returns when done.
func (winSys) readAt(h handle, p []byte, off int64) (int, error) {
	var done uint32
	ov := windows.Overlapped{Offset: uint32(off), OffsetHigh: uint32(uint64(off) >> 32)}
	err := windows.ReadFile(windows.Handle(h), p, &done, &ov)
	if errors.Is(err, windows.ERROR_HANDLE_EOF) {
		err = nil
	}
	return int(done), err
}

// readNames enumerates with GetFileInformationByHandleEx
// (FileFullDirectoryInfo): FILE_FULL_DIR_INFO records, NextEntryOffset at
// 0, FileNameLength at 60, FileName (UTF-16) at 68.
func (winSys) readNames(dir handle) ([]string, error) {
	buf := make([]uint64, 8<<10)
	b := unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), len(buf)*8)
	var names []string
	for {
		err := windows.GetFileInformationByHandleEx(windows.Handle(dir), windows.FileFullDirectoryInfo, &b[0], uint32(len(b)))
		if errors.Is(err, windows.ERROR_NO_MORE_FILES) {
			return names, nil
		}
		if err != nil {
			return nil, err
		}
		for off := 0; ; {
			rec := b[off:]
			n := int(binary.LittleEndian.Uint32(rec[60:64]))
			u := make([]uint16, n/2)
			for i := range u {
				u[i] = binary.LittleEndian.Uint16(rec[68+2*i:])
			}
			if name := windows.UTF16ToString(u); name != "." && name != ".." {
				names = append(names, name)
			}
			next := int(binary.LittleEndian.Uint32(rec[0:4]))
			if next == 0 {
				break
			}
			off += next
		}
	}
}

func (s winSys) renameNoReplace(sdir handle, sname string, ddir handle, dname string) error {
	h, err := ntOpen(sdir, sname, windows.DELETE, 0)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	return s.renameHandle(handle(h), ddir, dname)
}

func (s winSys) unlink(dir handle, name string) error {
	h, err := ntOpen(dir, name, windows.DELETE, windows.FILE_NON_DIRECTORY_FILE)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	return s.deleteHandle(handle(h))
}

func (winSys) close(h handle) error { return windows.CloseHandle(windows.Handle(h)) }

// deleteHandle deletes the open file with POSIX semantics (the name goes
// at once, even if others hold it open). Where the file system lacks
// them (FAT), it falls back to FileDispositionInfo: the file goes when
// the last handle closes; the name is the verified file's either way.
func (winSys) deleteHandle(f handle) error {
	flags := uint32(windows.FILE_DISPOSITION_DELETE | windows.FILE_DISPOSITION_POSIX_SEMANTICS)
	err := windows.SetFileInformationByHandle(windows.Handle(f), windows.FileDispositionInfoEx, (*byte)(unsafe.Pointer(&flags)), 4)
	if errors.Is(err, windows.ERROR_INVALID_PARAMETER) || errors.Is(err, windows.ERROR_NOT_SUPPORTED) {
		del := uint32(1) // FILE_DISPOSITION_INFO.DeleteFile (a BOOLEAN, padded)
		err = windows.SetFileInformationByHandle(windows.Handle(f), windows.FileDispositionInfo, (*byte)(unsafe.Pointer(&del)), 4)
	}
	return err
}

// renameHandle renames the open file to dname in ddir with
// FILE_RENAME_INFORMATION(_EX): Flags (or ReplaceIfExists) at 0 without
// REPLACE_IF_EXISTS, RootDirectory at 8, FileNameLength at 16, FileName
// at 20. An existing destination fails with STATUS_OBJECT_NAME_COLLISION.
func (winSys) renameHandle(f handle, ddir handle, dname string) error {
	name, err := windows.UTF16FromString(dname)
	if err != nil {
		return err
	}
	name = name[:len(name)-1]
	type renameInfo struct {
		Flags          uint32
		RootDirectory  windows.Handle
		FileNameLength uint32
		FileName       [1]uint16
	}
	size := int(unsafe.Offsetof(renameInfo{}.FileName)) + 2*len(name) + 2
	buf := make([]uint64, (size+7)/8)
	ri := (*renameInfo)(unsafe.Pointer(&buf[0]))
	ri.Flags = windows.FILE_RENAME_POSIX_SEMANTICS
	ri.RootDirectory = windows.Handle(ddir)
	ri.FileNameLength = uint32(2 * len(name))
	copy(unsafe.Slice(&ri.FileName[0], len(name)), name)
	var iosb windows.IO_STATUS_BLOCK
	err = windows.NtSetInformationFile(windows.Handle(f), &iosb, (*byte)(unsafe.Pointer(&buf[0])), uint32(size), fileRenameInformationEx)
	if errors.Is(err, windows.STATUS_INVALID_INFO_CLASS) || errors.Is(err, windows.STATUS_NOT_SUPPORTED) || errors.Is(err, windows.STATUS_INVALID_PARAMETER) {
		ri.Flags = 0 // ReplaceIfExists = FALSE
		err = windows.NtSetInformationFile(windows.Handle(f), &iosb, (*byte)(unsafe.Pointer(&buf[0])), uint32(size), windows.FileRenameInformation)
	}
	return err
}

func (winSys) kind(err error) errKind {
	if err == nil {
		return kindNone
	}
	if errors.Is(err, errReparse) {
		return kindSymlink
	}
	var st windows.NTStatus
	if errors.As(err, &st) {
		switch st {
		case windows.STATUS_REPARSE_POINT_ENCOUNTERED, windows.STATUS_STOPPED_ON_SYMLINK:
			return kindSymlink
		case windows.STATUS_OBJECT_NAME_NOT_FOUND, windows.STATUS_OBJECT_PATH_NOT_FOUND, windows.STATUS_DELETE_PENDING:
			return kindNotExist
		case windows.STATUS_NOT_A_DIRECTORY:
			return kindNotDir
		case windows.STATUS_FILE_IS_A_DIRECTORY:
			return kindNotRegular
		case windows.STATUS_OBJECT_NAME_COLLISION:
			return kindExists
		case windows.STATUS_NOT_SAME_DEVICE:
			return kindCrossDevice
		case windows.STATUS_INVALID_INFO_CLASS, windows.STATUS_NOT_SUPPORTED:
			return kindNoReplaceUnsupported
		case windows.STATUS_ACCESS_DENIED, windows.STATUS_CANNOT_DELETE, windows.STATUS_MEDIA_WRITE_PROTECTED, windows.STATUS_SHARING_VIOLATION:
			return kindDenied
		}
		return kindOther
	}
	switch {
	case errors.Is(err, windows.ERROR_STOPPED_ON_SYMLINK), errors.Is(err, windows.ERROR_CANT_ACCESS_FILE):
		return kindSymlink
	case errors.Is(err, windows.ERROR_FILE_NOT_FOUND), errors.Is(err, windows.ERROR_PATH_NOT_FOUND):
		return kindNotExist
	case errors.Is(err, windows.ERROR_DIRECTORY):
		return kindNotDir
	case errors.Is(err, windows.ERROR_ALREADY_EXISTS), errors.Is(err, windows.ERROR_FILE_EXISTS):
		return kindExists
	case errors.Is(err, windows.ERROR_NOT_SAME_DEVICE):
		return kindCrossDevice
	case errors.Is(err, windows.ERROR_ACCESS_DENIED), errors.Is(err, windows.ERROR_SHARING_VIOLATION), errors.Is(err, windows.ERROR_WRITE_PROTECT):
		return kindDenied
	}
	return kindOther
}
