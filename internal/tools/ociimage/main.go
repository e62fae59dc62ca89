// Command ociimage writes the container image of mcpsafe as an OCI image
// layout (a directory any OCI tool reads: crane push, skopeo copy, podman
// load), without a container daemon. It is not part of mcpsafe.
//
//	ociimage -bin PATH -arch amd64|arm64 -version v0.1.0 [-revision SHA] [-created EPOCH] -out DIR
//
// The image holds one layer: the static binary at /usr/local/bin/mcpsafe,
// an /etc/passwd and /etc/group naming the user nonroot (uid and gid
// 65532, no login shell), its home and a /tmp; nothing else, no shell.
// It runs as 65532:65532 with mcpsafe as the entrypoint, and carries the OCI
// labels and io.modelcontextprotocol.server.name (the MCP Registry checks
// it against server.json). Every time in it is -created, so the same
// binary gives the same image digest.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// ServerName is the MCP Registry name of the server the image runs.
const ServerName = "io.github.mcpsafe/mcpsafe-files"

func main() {
	bin := flag.String("bin", "", "the linux mcpsafe binary (static: CGO_ENABLED=0)")
	arch := flag.String("arch", "amd64", "its architecture")
	ver := flag.String("version", "", "the release tag, e.g. v0.1.0 (the image's version label and ref name)")
	rev := flag.String("revision", "", "the commit it was built from")
	created := flag.Int64("created", 0, "the image's time, in seconds since 1970 (e.g. the commit's time)")
	out := flag.String("out", "", "the OCI layout directory to write (created)")
	flag.Parse()
	if *bin == "" || *out == "" || *ver == "" {
		fmt.Fprintln(os.Stderr, "usage: ociimage -bin PATH -arch ARCH -version TAG [-revision SHA] [-created EPOCH] -out DIR")
		os.Exit(2)
	}
	if err := build(*bin, *arch, *ver, *rev, time.Unix(*created, 0).UTC(), *out); err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}

const uid = 65532

func build(bin, arch, ver, rev string, created time.Time, out string) error {
	exe, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	layerTar, err := rootfs(exe, created)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: created}, CreatedBy: "ociimage: mcpsafe " + ver, Comment: "static binary, nonroot user, no shell",
	}})
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: created}
	cf.Config.User = strconv.Itoa(uid) + ":" + strconv.Itoa(uid)
	cf.Config.Entrypoint = []string{"/usr/local/bin/mcpsafe"}
	cf.Config.Cmd = []string{"--help"}
	cf.Config.WorkingDir = "/home/nonroot"
	cf.Config.Env = []string{"HOME=/home/nonroot", "PATH=/usr/local/bin"}
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.title":       "mcpsafe",
		"org.opencontainers.image.description": "Human approval for destructive MCP tools: mcpsafe files, proxy, approvals serve",
		"org.opencontainers.image.version":     ver,
		"org.opencontainers.image.revision":    rev,
		"org.opencontainers.image.created":     created.Format(time.RFC3339),
		"org.opencontainers.image.source":      "https://github.com/mcpsafe/mcpsafe",
		"org.opencontainers.image.url":         "https://github.com/mcpsafe/mcpsafe",
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"io.modelcontextprotocol.server.name":  ServerName,
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	p, err := layout.Write(out, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendImage(img,
		layout.WithPlatform(v1.Platform{OS: "linux", Architecture: arch}),
		layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ver}))
}

// rootfs is the one layer: the binary, the nonroot user, and the
// directories it writes to.
func rootfs(exe []byte, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64, owner int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, Uid: owner, Gid: owner, ModTime: mtime})
	}
	file := func(name string, mode int64, body []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(body)), ModTime: mtime}); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	steps := []func() error{
		func() error { return dir("etc/", 0o755, 0) },
		func() error {
			return file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"))
		},
		func() error { return file("etc/group", 0o644, []byte("root:x:0:\nnonroot:x:65532:\n")) },
		func() error { return dir("home/", 0o755, 0) },
		func() error { return dir("home/nonroot/", 0o700, uid) },
		func() error { return dir("tmp/", 0o1777, 0) },
		func() error { return dir("usr/", 0o755, 0) },
		func() error { return dir("usr/local/", 0o755, 0) },
		func() error { return dir("usr/local/bin/", 0o755, 0) },
		func() error { return file("usr/local/bin/mcpsafe", 0o755, exe) },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
