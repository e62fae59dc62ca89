package packaging

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe/internal/version"
)

// releasePlatforms is what the reproducibility test builds: this machine's
// platform (a minute on 2 cores), or all six with MCPSAFE_RELEASE_ALL=1.
func releasePlatforms() string {
	if os.Getenv("MCPSAFE_RELEASE_ALL") == "1" {
		return "darwin/amd64 darwin/arm64 linux/amd64 linux/arm64 windows/amd64 windows/arm64"
	}
	return runtime.GOOS + "/" + runtime.GOARCH
}

// release runs scripts/release for the tag into a fresh directory and
// returns it with the names of what it wrote.
func release(t *testing.T, tag string, env ...string) (string, []string) {
	t.Helper()
	out := t.TempDir()
	script(t, append([]string{"RELEASE_OUT=" + out, "RELEASE_BUNDLES=0", "RELEASE_PLATFORMS=" + releasePlatforms(), "SOURCE_DATE_EPOCH=1767225600"}, env...), "release", tag)
	entries, err := os.ReadDir(out)
	must(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return out, names
}

// untarBinary extracts the mcpsafe binary of a .tar.gz release archive,
// checking that every entry carries the fixed time and no owner names.
func untarBinary(t *testing.T, archive string, mtime int64) string {
	t.Helper()
	f, err := os.Open(archive)
	must(t, err)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	must(t, err)
	tr := tar.NewReader(gz)
	var bin string
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		must(t, err)
		names = append(names, h.Name)
		if h.ModTime.Unix() != mtime || h.Uname != "" || h.Uid != 0 {
			t.Errorf("%s: time %v, owner %q/%d", h.Name, h.ModTime, h.Uname, h.Uid)
		}
		if filepath.Base(h.Name) == "mcpsafe" {
			bin = filepath.Join(t.TempDir(), "mcpsafe")
			w, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
			must(t, err)
			_, err = io.Copy(w, tr)
			must(t, err)
			must(t, w.Close())
		}
	}
	dir := strings.TrimSuffix(filepath.Base(archive), ".tar.gz")
	if want := []string{dir + "/", dir + "/mcpsafe", dir + "/LICENSE", dir + "/README.md"}; !slices.Equal(names, want) {
		t.Fatalf("archive holds %v, want %v", names, want)
	}
	return bin
}

// A release built twice is the same bytes twice: archives, SBOMs and the
// checksums file. The binary in the archive says the tag; the checksums
// file names every file with its SHA-256; each SBOM is CycloneDX for
// mcpsafe. Control: a different tag gives different bytes (the comparison
// can see a change).
func TestReleaseIsReproducible(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed:", err)
	}
	tag := "v" + version.Release
	a, names := release(t, tag)
	b, namesB := release(t, tag)
	if !slices.Equal(names, namesB) {
		t.Fatalf("two builds wrote %v and %v", names, namesB)
	}
	plats := strings.Fields(releasePlatforms())
	if len(names) != 2*len(plats)+1 {
		t.Fatalf("wrote %v, want an archive and an SBOM per platform (%v) and the checksums", names, plats)
	}
	for _, n := range names {
		x, err := os.ReadFile(filepath.Join(a, n))
		must(t, err)
		y, err := os.ReadFile(filepath.Join(b, n))
		must(t, err)
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two builds of the same commit", n)
		}
	}
	// The checksums file names every other file with its SHA-256.
	sums, err := os.ReadFile(filepath.Join(a, "mcpsafe_"+version.Release+"_checksums.txt"))
	must(t, err)
	lines := strings.Split(strings.TrimSpace(string(sums)), "\n")
	if len(lines) != len(names)-1 {
		t.Fatalf("checksums file has %d lines for %d files:\n%s", len(lines), len(names)-1, sums)
	}
	for _, l := range lines {
		sum, name, ok := strings.Cut(l, "  ")
		if !ok {
			t.Fatalf("checksums line %q", l)
		}
		b, err := os.ReadFile(filepath.Join(a, name))
		must(t, err)
		if got := sha256.Sum256(b); hex.EncodeToString(got[:]) != sum {
			t.Errorf("checksums file says %s for %s, the file is %x", sum, name, got)
		}
	}
	for _, p := range plats {
		goos, goarch, _ := strings.Cut(p, "/")
		base := "mcpsafe_" + version.Release + "_" + goos + "_" + goarch
		var sbom struct {
			BOMFormat string `json:"bomFormat"`
			Metadata  struct {
				Component struct {
					Name       string `json:"name"`
					Properties []struct{ Name, Value string }
				} `json:"component"`
			} `json:"metadata"`
			Components []struct{ Name, Version string }
		}
		raw, err := os.ReadFile(filepath.Join(a, base+".sbom.cdx.json"))
		must(t, err)
		must(t, json.Unmarshal(raw, &sbom))
		if sbom.BOMFormat != "CycloneDX" || sbom.Metadata.Component.Name != "github.com/mcpsafe/mcpsafe" || len(sbom.Components) < 10 {
			t.Errorf("%s SBOM: format %q, component %q, %d components", p, sbom.BOMFormat, sbom.Metadata.Component.Name, len(sbom.Components))
		}
		if !strings.Contains(string(raw), `"`+goos+`"`) || !strings.Contains(string(raw), `"`+goarch+`"`) {
			t.Errorf("%s SBOM does not name its platform", p)
		}
		if goos == runtime.GOOS && goarch == runtime.GOARCH {
			bin := untarBinary(t, filepath.Join(a, base+".tar.gz"), 1767225600)
			out, err := exec.Command(bin, "version").CombinedOutput()
			if err != nil || !strings.HasPrefix(string(out), "mcpsafe "+tag+" ") {
				t.Errorf("the released binary says %q (%v), want mcpsafe %s", out, err, tag)
			}
		}
	}
	// Control: another tag is another binary.
	c, _ := release(t, tag+"-rc.1", "RELEASE_SNAPSHOT=1", "RELEASE_PLATFORMS="+runtime.GOOS+"/"+runtime.GOARCH)
	ext := map[bool]string{true: ".zip", false: ".tar.gz"}[runtime.GOOS == "windows"]
	x, err := os.ReadFile(filepath.Join(a, "mcpsafe_"+version.Release+"_"+runtime.GOOS+"_"+runtime.GOARCH+ext))
	must(t, err)
	y, err := os.ReadFile(filepath.Join(c, "mcpsafe_"+version.Release+"-rc.1_"+runtime.GOOS+"_"+runtime.GOARCH+ext))
	must(t, err)
	if bytes.Equal(x, y) {
		t.Fatal("archives of two tags are the same bytes: the comparison sees nothing")
	}
}

// scripts/release refuses a tag that is not the module's release version.
func TestReleaseRefusesAnotherVersion(t *testing.T) {
	cmd := exec.Command(filepath.Join(repoRoot(t), "scripts", "release"), "v9.9.9")
	cmd.Env = append(os.Environ(), "RELEASE_OUT="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "internal/version.Release") {
		t.Fatalf("scripts/release v9.9.9: %v\n%s", err, out)
	}
}
