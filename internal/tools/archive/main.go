// Command archive writes a release archive that is the same bytes every
// time for the same files: entries in the order given, one fixed
// modification time (-mtime, seconds since 1970, e.g. the commit's time),
// owner 0, no user or host names, modes 0755 for executables and 0644 for
// the rest. scripts/release uses it; it is not part of mcpsafe.
//
//	archive -o OUT.tar.gz|OUT.zip -mtime EPOCH -dir NAME FILE...
//
// Each FILE goes in as NAME/base(FILE).
package main

import (
	"archive/tar"
	"archive/zip"
	"compress/flate"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	out := flag.String("o", "", "output `FILE`, .tar.gz or .zip")
	mtime := flag.Int64("mtime", 0, "modification time of every entry, in seconds since 1970 (UTC)")
	dir := flag.String("dir", "", "`NAME` of the one directory the files go in")
	flag.Parse()
	if *out == "" || *dir == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: archive -o OUT.tar.gz|OUT.zip -mtime EPOCH -dir NAME FILE...")
		os.Exit(2)
	}
	if err := write(*out, *dir, time.Unix(*mtime, 0).UTC(), flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "archive:", err)
		os.Exit(1)
	}
}

func write(out, dir string, mtime time.Time, files []string) (err error) {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	switch {
	case strings.HasSuffix(out, ".tar.gz"):
		return writeTarGz(f, dir, mtime, files)
	case strings.HasSuffix(out, ".zip"):
		return writeZip(f, dir, mtime, files)
	}
	return fmt.Errorf("%s: name it .tar.gz or .zip", out)
}

// entry is one file's content and mode.
func entry(name string) ([]byte, int64, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, 0, err
	}
	fi, err := os.Stat(name)
	if err != nil {
		return nil, 0, err
	}
	if fi.Mode()&0o111 != 0 {
		return b, 0o755, nil
	}
	return b, 0o644, nil
}

func writeTarGz(w io.Writer, dir string, mtime time.Time, files []string) error {
	gz, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	gz.ModTime = time.Time{} // no time, no name in the gzip header
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX}); err != nil {
		return err
	}
	for _, name := range files {
		b, mode, err := entry(name)
		if err != nil {
			return err
		}
		h := &tar.Header{Typeflag: tar.TypeReg, Name: path.Join(dir, filepath.Base(name)), Mode: mode, Size: int64(len(b)), ModTime: mtime, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func writeZip(w io.Writer, dir string, mtime time.Time, files []string) error {
	zw := zip.NewWriter(w)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(w, flate.BestCompression)
	})
	for _, name := range files {
		b, mode, err := entry(name)
		if err != nil {
			return err
		}
		h := &zip.FileHeader{Name: path.Join(dir, filepath.Base(name)), Method: zip.Deflate, Modified: mtime}
		h.SetMode(os.FileMode(mode))
		fw, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := fw.Write(b); err != nil {
			return err
		}
	}
	return zw.Close()
}
