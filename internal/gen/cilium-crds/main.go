// Command cilium-crds copies the CiliumNetworkPolicy CRDs out of the pinned
// github.com/cilium/cilium module (tools/cilium/go.mod; its go.sum pins the
// bytes) into internal/localcluster/crds, where the paddock binary embeds them. The local
// cluster installs them so the real API server validates Paddock's FQDN policies
// against Cilium's own schema; no Cilium agent runs there, so nothing enforces them.
//
//	go run ./internal/gen/cilium-crds
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/paddock-platform/paddock/internal/pins"
)

// crdFiles are the CRDs Paddock's objects use, relative to the module root.
var crdFiles = []string{
	"pkg/k8s/apis/cilium.io/client/crds/v2/ciliumnetworkpolicies.yaml",
	"pkg/k8s/apis/cilium.io/client/crds/v2/ciliumclusterwidenetworkpolicies.yaml",
}

func main() {
	out, err := render()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cilium-crds:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(outputPath(), out, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "cilium-crds:", err)
		os.Exit(1)
	}
	fmt.Println("wrote", outputPath())
}

func repoRoot() string {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "."
	}
	return strings.TrimSpace(string(out))
}

func outputPath() string {
	return filepath.Join(repoRoot(), "internal", "localcluster", "crds", "cilium-"+pins.Cilium+".yaml")
}

// render downloads (or finds in the module cache) the pinned module through the
// tools/cilium module, so go.sum verifies it, and concatenates the CRDs.
func render() ([]byte, error) {
	cmd := exec.Command("go", "mod", "download", "-json", "github.com/cilium/cilium")
	cmd.Dir = filepath.Join(repoRoot(), "tools", "cilium")
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	raw, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go mod download github.com/cilium/cilium in tools/cilium: %w", err)
	}
	var mod struct{ Version, Dir, Error string }
	if err := json.Unmarshal(raw, &mod); err != nil {
		return nil, err
	}
	if mod.Error != "" {
		return nil, fmt.Errorf("%s", mod.Error)
	}
	if mod.Version != pins.Cilium {
		return nil, fmt.Errorf("tools/cilium/go.mod pins cilium %s but internal/pins/versions.env says %s", mod.Version, pins.Cilium)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Cilium %s CRDs copied from github.com/cilium/cilium@%s by `go run ./internal/gen/cilium-crds`; do not edit.\n", mod.Version, mod.Version)
	for _, f := range crdFiles {
		data, err := os.ReadFile(filepath.Join(mod.Dir, f))
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(bytes.TrimPrefix(data, []byte("---\n")))
		if !bytes.HasSuffix(data, []byte("\n")) {
			b.WriteString("\n")
		}
	}
	return b.Bytes(), nil
}
