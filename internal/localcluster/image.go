// Images without a registry: the real node's pause and sandbox images are built
// from Debian's busybox-static (one static binary and its applet links) as
// docker-archive tars, which `ctr images import` loads into containerd's k8s.io
// namespace. The archives are reproducible: same busybox, same bytes.

package localcluster

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"
)

// imageSpec is one image built from busybox.
type imageSpec struct {
	Ref string   // repository:tag
	Cmd []string // the image's default command
	// Tool is a pinned tool (a key of the cluster's binaries) the image
	// carries as /bin/<Tool> beside busybox; "" for none.
	Tool string
}

// pauseCmd keeps the pod sandbox alive and exits on SIGTERM (as PID 1 a process
// has no default signal handlers, so sleep alone would ignore it).
var pauseCmd = []string{"/bin/sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"}

func nodeImages() []imageSpec {
	return []imageSpec{
		{Ref: PauseImage, Cmd: pauseCmd},
		{Ref: SandboxImage, Cmd: []string{"/bin/sh"}},
		{Ref: CoreDNSImage, Cmd: []string{"/bin/coredns"}, Tool: "coredns"},
	}
}

// imageFileName is the archive's file name for a reference.
func imageFileName(ref string) string {
	r := strings.NewReplacer("/", "_", ":", "_")
	return r.Replace(ref) + ".tar"
}

// busyboxApplets lists the applets the busybox binary provides.
func busyboxApplets(busybox string) ([]string, error) {
	out, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list: %w", busybox, err)
	}
	var applets []string
	for _, a := range strings.Fields(string(out)) {
		if a != "busybox" && !strings.Contains(a, "/") {
			applets = append(applets, a)
		}
	}
	sort.Strings(applets)
	return applets, nil
}

// epoch is the modification time of every file in the images (reproducibility).
var epoch = time.Unix(0, 0).UTC()

// rootfsLayer builds the image's only layer: /bin/busybox, a link per applet in
// /bin, the directories a container expects, and the extra binaries (by name,
// into /bin).
func rootfsLayer(busybox []byte, applets []string, extra map[string][]byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := func(h *tar.Header) error {
		h.ModTime, h.Uid, h.Gid, h.Format = epoch, 0, 0, tar.FormatPAX
		return tw.WriteHeader(h)
	}
	for _, d := range []struct {
		name string
		mode int64
	}{{"bin/", 0o755}, {"dev/", 0o755}, {"etc/", 0o755}, {"proc/", 0o755}, {"root/", 0o700}, {"sys/", 0o755}, {"tmp/", 0o1777}, {"var/", 0o755}, {"var/tmp/", 0o1777}} {
		if err := hdr(&tar.Header{Typeflag: tar.TypeDir, Name: d.name, Mode: d.mode}); err != nil {
			return nil, err
		}
	}
	// Numeric users only (pods run as a non-root UID); names help `id` and `ps`.
	for name, body := range map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n",
		"etc/group":  "root:x:0:\nnogroup:x:65534:\n",
	} {
		if err := hdr(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(body))}); err != nil {
			return nil, err
		}
		if _, err := io.WriteString(tw, body); err != nil {
			return nil, err
		}
	}
	if err := hdr(&tar.Header{Typeflag: tar.TypeReg, Name: "bin/busybox", Mode: 0o755, Size: int64(len(busybox))}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(busybox); err != nil {
		return nil, err
	}
	for _, a := range applets {
		if extra[a] != nil {
			continue
		}
		if err := hdr(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + a, Linkname: "busybox", Mode: 0o777}); err != nil {
			return nil, err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(extra)) {
		if err := hdr(&tar.Header{Typeflag: tar.TypeReg, Name: "bin/" + name, Mode: 0o755, Size: int64(len(extra[name]))}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(extra[name]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// dockerArchive writes a docker-archive (docker save format) holding one image
// with the given layer.
func dockerArchive(w io.Writer, spec imageSpec, layer []byte) error {
	layerID := sha(layer)
	config, err := json.Marshal(map[string]any{
		"architecture": goarch(),
		"os":           "linux",
		"created":      epoch.Format(time.RFC3339),
		"config": map[string]any{
			"Cmd":        spec.Cmd,
			"Env":        []string{"PATH=/bin"},
			"WorkingDir": "/",
		},
		"rootfs":  map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + layerID}},
		"history": []map[string]any{{"created": epoch.Format(time.RFC3339), "created_by": "paddock: Debian busybox-static"}},
	})
	if err != nil {
		return err
	}
	configID := sha(config)
	manifest, err := json.Marshal([]map[string]any{{
		"Config":   configID + ".json",
		"RepoTags": []string{spec.Ref},
		"Layers":   []string{layerID + "/layer.tar"},
	}})
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	for _, f := range []struct {
		name string
		body []byte
	}{{configID + ".json", config}, {layerID + "/layer.tar", layer}, {"manifest.json", manifest}} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: 0o644, Size: int64(len(f.body)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
		if _, err := tw.Write(f.body); err != nil {
			return err
		}
	}
	return tw.Close()
}

// writeNodeImages builds every node image from busybox (and the pinned tools
// some carry, from bins) into dir.
func writeNodeImages(dir, busybox string, bins map[string]string) error {
	bin, err := os.ReadFile(busybox)
	if err != nil {
		return fmt.Errorf("read %s (Debian busybox-static; run `make node-packages`): %w", busybox, err)
	}
	applets, err := busyboxApplets(busybox)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, spec := range nodeImages() {
		var extra map[string][]byte
		if spec.Tool != "" {
			b, err := os.ReadFile(bins[spec.Tool])
			if err != nil {
				return fmt.Errorf("image %s needs the pinned %s (run `make tools`): %w", spec.Ref, spec.Tool, err)
			}
			extra = map[string][]byte{spec.Tool: b}
		}
		layer, err := rootfsLayer(bin, applets, extra)
		if err != nil {
			return err
		}
		f, err := os.Create(filepath.Join(dir, imageFileName(spec.Ref)))
		if err != nil {
			return err
		}
		err = dockerArchive(f, spec, layer)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	_, err = writeGatewayImage(dir)
	return err
}

func goarch() string { return runtime.GOARCH }
