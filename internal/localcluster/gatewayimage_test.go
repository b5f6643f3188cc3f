package localcluster

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/paddock-platform/paddock/internal/model"
)

// The gateway's image holds the binary, the CA bundle and the passwd entry
// of its user, and nothing to run besides (no shell); it is tagged with the
// image the manifests of target local name.
func TestGatewayImage(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "paddock-gateway")
	if err := os.WriteFile(bin, []byte("\x7fELF gateway"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(GatewayBinaryEnv, bin)
	ref, err := writeGatewayImage(dir)
	if err != nil || ref != model.LocalGatewayImage() {
		t.Fatalf("writeGatewayImage = %q, %v; want %q", ref, err, model.LocalGatewayImage())
	}
	archive, err := os.ReadFile(filepath.Join(dir, imageFileName(ref)))
	if err != nil {
		t.Fatal(err)
	}
	files := untar(t, archive)
	var manifest []struct {
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(files["manifest.json"].body, &manifest); err != nil || len(manifest) != 1 || manifest[0].RepoTags[0] != ref {
		t.Fatalf("manifest %s (%v)", files["manifest.json"].body, err)
	}
	layer := untar(t, files[manifest[0].Layers[0]].body)
	if f, ok := layer["paddock-gateway"]; !ok || string(f.body) != "\x7fELF gateway" || f.mode != 0o755 {
		t.Errorf("binary %+v", f)
	}
	for _, name := range []string{"etc/passwd", "etc/ssl/certs/ca-certificates.crt", "tmp/"} {
		if _, ok := layer[name]; !ok {
			t.Errorf("no %s in the layer", name)
		}
	}
	for _, shell := range []string{"bin/sh", "bin/busybox"} {
		if _, ok := layer[shell]; ok {
			t.Errorf("the gateway image carries %s", shell)
		}
	}

	// Without a binary no image is written, and that is no error.
	t.Setenv(GatewayBinaryEnv, "")
	if ref, err := writeGatewayImage(t.TempDir()); ref != "" || err != nil {
		if _, ok := gatewayBinary(); !ok {
			t.Errorf("no binary: %q, %v", ref, err)
		}
	}
}

type tarFile struct {
	mode int64
	body []byte
}

func untar(t *testing.T, b []byte) map[string]tarFile {
	t.Helper()
	out := map[string]tarFile{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = tarFile{mode: h.Mode, body: body}
	}
}
