// The egress gateway's image on the real node: the static paddock-gateway
// binary built beside this paddock (`make build`, CGO_ENABLED=0, -trimpath,
// -ldflags "-s -w"), the system CA bundle of the machine, and an unprivileged
// user, as a docker-archive like the busybox images (image.go), tagged with
// this Paddock build's version (model.LocalGatewayImage), which is the image
// the platform's manifests name on target local. No shell, no busybox.

package localcluster

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/paddock-platform/paddock/internal/model"
)

// GatewayBinaryEnv names a paddock-gateway binary to use instead of the one
// beside the paddock executable.
const GatewayBinaryEnv = "PADDOCK_GATEWAY_BINARY"

// gatewayCABundles are where Debian-like and other systems keep the bundle
// of trusted roots; the first that exists goes into the image.
var gatewayCABundles = []string{"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"}

// gatewayBinary finds the paddock-gateway binary: $PADDOCK_GATEWAY_BINARY,
// else beside the running executable. ok is false when there is none.
func gatewayBinary() (string, bool) {
	if p := os.Getenv(GatewayBinaryEnv); p != "" {
		return p, true
	}
	exe, err := os.Executable()
	if err != nil {
		return "", false
	}
	p := filepath.Join(filepath.Dir(exe), "paddock-gateway")
	if _, err := os.Stat(p); err != nil {
		return "", false
	}
	return p, true
}

// gatewayLayer is the gateway image's one layer: /paddock-gateway, the CA
// bundle at /etc/ssl/certs/ca-certificates.crt (where Go looks first), an
// /etc/passwd naming the gateway's user, and an empty /tmp.
func gatewayLayer(binary, caBundle []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	write := func(h *tar.Header, body []byte) error {
		h.ModTime, h.Uid, h.Gid, h.Format = epoch, 0, 0, tar.FormatPAX
		h.Size = int64(len(body))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	for _, d := range []struct {
		name string
		mode int64
	}{{"etc/", 0o755}, {"etc/ssl/", 0o755}, {"etc/ssl/certs/", 0o755}, {"tmp/", 0o1777}} {
		if err := write(&tar.Header{Typeflag: tar.TypeDir, Name: d.name, Mode: d.mode}, nil); err != nil {
			return nil, err
		}
	}
	passwd := "root:x:0:0:root:/:/bin/false\ngateway:x:65532:65532:gateway:/:/bin/false\n"
	files := []struct {
		name string
		mode int64
		body []byte
	}{
		{"etc/passwd", 0o644, []byte(passwd)},
		{"etc/group", 0o644, []byte("root:x:0:\ngateway:x:65532:\n")},
		{"etc/ssl/certs/ca-certificates.crt", 0o644, caBundle},
		{"paddock-gateway", 0o755, binary},
	}
	for _, f := range files {
		if err := write(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode}, f.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeGatewayImage writes the gateway's image into dir, and reports its
// reference; "" (and no error) when no paddock-gateway binary is at hand, so
// a node without it still starts (a tenant's gateway then cannot run and
// `paddock up` waits on it: `make build` builds both binaries).
func writeGatewayImage(dir string) (string, error) {
	bin, ok := gatewayBinary()
	if !ok {
		return "", nil
	}
	binary, err := os.ReadFile(bin)
	if err != nil {
		return "", fmt.Errorf("the egress gateway binary: %w", err)
	}
	var ca []byte
	for _, p := range gatewayCABundles {
		if ca, err = os.ReadFile(p); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	layer, err := gatewayLayer(binary, ca)
	if err != nil {
		return "", err
	}
	spec := imageSpec{Ref: model.LocalGatewayImage(), Cmd: []string{"/paddock-gateway"}}
	f, err := os.Create(filepath.Join(dir, imageFileName(spec.Ref)))
	if err != nil {
		return "", err
	}
	err = dockerArchive(f, spec, layer)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return spec.Ref, err
}
