package packaging

import (
	"archive/tar"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/mcpsafe/mcpsafe/internal/version"
)

// goBuild builds a package of this module for linux on this architecture,
// static, and returns the binary.
func goBuild(t *testing.T, pkg string, env ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, pkg)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// The image internal/tools/ociimage writes, read back from its OCI layout:
// it runs mcpsafe as uid 65532 with mcpsafe as the entrypoint and the OCI
// and MCP Registry labels; its one layer holds the binary, the user and
// nothing to run a shell with; and the binary taken out of the layer runs
// `mcpsafe version`, naming the tag.
func TestImageConfigAndBinary(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the image's binary runs on linux only")
	}
	tag := "v" + version.Release
	mcpsafe := goBuild(t, "./cmd/mcpsafe", "CGO_ENABLED=0", "GOOS=linux",
		"GOFLAGS=-buildvcs=false -ldflags=-X=github.com/mcpsafe/mcpsafe/internal/version.Tag="+tag)
	tool := goBuild(t, "./internal/tools/ociimage")
	out := filepath.Join(t.TempDir(), "image")
	if b, err := exec.Command(tool, "-bin", mcpsafe, "-arch", runtime.GOARCH, "-version", tag, "-revision", "abc123", "-created", "1767225600", "-out", out).CombinedOutput(); err != nil {
		t.Fatalf("ociimage: %v\n%s", err, b)
	}
	p, err := layout.FromPath(out)
	must(t, err)
	idx, err := p.ImageIndex()
	must(t, err)
	im, err := idx.IndexManifest()
	must(t, err)
	if len(im.Manifests) != 1 || im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != tag ||
		im.Manifests[0].Platform == nil || im.Manifests[0].Platform.Architecture != runtime.GOARCH {
		t.Fatalf("index: %+v", im.Manifests)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	must(t, err)
	cf, err := img.ConfigFile()
	must(t, err)
	c := cf.Config
	if c.User != "65532:65532" || !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/mcpsafe"}) || cf.OS != "linux" {
		t.Errorf("config: user %q, entrypoint %v, os %q", c.User, c.Entrypoint, cf.OS)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.version":    tag,
		"org.opencontainers.image.revision":   "abc123",
		"org.opencontainers.image.source":     "https://github.com/mcpsafe/mcpsafe",
		"org.opencontainers.image.licenses":   "Apache-2.0",
		"io.modelcontextprotocol.server.name": "io.github.mcpsafe/mcpsafe-files",
	} {
		if c.Labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, c.Labels[k], want)
		}
	}
	layers, err := img.Layers()
	must(t, err)
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	must(t, err)
	defer rc.Close()
	tr := tar.NewReader(rc)
	var names []string
	var bin string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		must(t, err)
		names = append(names, h.Name)
		if h.Name == "etc/passwd" {
			b, _ := io.ReadAll(tr)
			if !strings.Contains(string(b), "nonroot:x:65532:65532:") || strings.Contains(string(b), "/bin/sh") {
				t.Errorf("/etc/passwd:\n%s", b)
			}
		}
		if h.Name == "usr/local/bin/mcpsafe" {
			if h.Mode&0o111 == 0 {
				t.Errorf("the binary is not executable: %o", h.Mode)
			}
			bin = filepath.Join(t.TempDir(), "mcpsafe")
			w, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
			must(t, err)
			_, err = io.Copy(w, tr)
			must(t, err)
			must(t, w.Close())
		}
	}
	for _, n := range names {
		if strings.HasPrefix(n, "bin/") || strings.HasSuffix(n, "/sh") || strings.Contains(n, "busybox") {
			t.Errorf("the image holds %s: no shell wanted", n)
		}
	}
	if bin == "" {
		t.Fatalf("no usr/local/bin/mcpsafe in the layer: %v", names)
	}
	b, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(b), "mcpsafe "+tag+" ") {
		t.Fatalf("the image's mcpsafe version: %q, %v", b, err)
	}
	// The binary is static: it names no interpreter.
	if f, err := os.ReadFile(bin); err == nil && strings.Contains(string(f[:min(len(f), 4096)]), "ld-linux") {
		t.Error("the image's binary is dynamically linked")
	}
}
