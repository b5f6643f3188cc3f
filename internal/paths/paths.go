// Package paths says where Paddock keeps what it owns on this machine. Everything
// lives under one directory, PADDOCK_HOME (default ~/.paddock), so `make tools`,
// the CLI and the tests agree without configuration:
//
//	bin/       links to the pinned tool builds (make tools)
//	tools/     the version-keyed build cache behind those links
//	pulumi/    PULUMI_HOME: the kubernetes provider plugin, installed, never downloaded
//	state/     default Pulumi file backend
//	secrets/   the generated state passphrase (0600)
//	local/     the embedded local cluster: kubeconfig, logs, pid files
package paths

import (
	"fmt"
	"os"
	"path/filepath"
)

// Home is PADDOCK_HOME, or ~/.paddock.
func Home() string {
	if h := os.Getenv("PADDOCK_HOME"); h != "" {
		if abs, err := filepath.Abs(h); err == nil {
			return abs
		}
		return h
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".paddock")
	}
	return ".paddock"
}

// Bin is the directory `make tools` links the pinned binaries into.
func Bin() string { return filepath.Join(Home(), "bin") }

// PulumiHome is the PULUMI_HOME Paddock runs the engine with.
func PulumiHome() string { return filepath.Join(Home(), "pulumi") }

// StateDir is the default file backend.
func StateDir() string { return filepath.Join(Home(), "state") }

// SecretsDir holds the generated state passphrase.
func SecretsDir() string { return filepath.Join(Home(), "secrets") }

// LocalDir is the embedded local cluster's working directory.
func LocalDir() string { return filepath.Join(Home(), "local") }

// ErrToolMissing is returned (wrapped) when a pinned tool has not been built.
type ErrToolMissing struct{ Name, Path string }

func (e *ErrToolMissing) Error() string {
	return fmt.Sprintf("%s is not built (looked for %s); run `make tools` in the paddock checkout first", e.Name, e.Path)
}

// Tool returns the path of a pinned tool built by `make tools`, or an
// *ErrToolMissing that tells the user how to get it.
func Tool(name string) (string, error) {
	p := filepath.Join(Bin(), name)
	if _, err := os.Stat(p); err != nil {
		return "", &ErrToolMissing{Name: name, Path: p}
	}
	return p, nil
}
