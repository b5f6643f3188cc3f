package targets

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"

	"k8s.io/client-go/tools/clientcmd"
)

// ClusterOutput is the stack output under which the program records the
// cluster its kubernetes provider reached (a ClusterIdentity), so a later
// run can tell the same cluster behind another kubeconfig path.
const ClusterOutput = "kubernetesCluster"

// ClusterIdentity is the cluster a kubeconfig's context points at: its API
// server and the CA that vouches for it. Two runners whose kubeconfigs lie
// at different paths, or carry different credentials, reach the same
// cluster when both agree; the credentials are not part of it, and nothing
// in it is secret.
type ClusterIdentity struct {
	Server string `json:"server"`
	// CASHA256 is the SHA-256 of the CA bundle (PEM, as the kubeconfig or
	// its certificate-authority file holds it).
	CASHA256 string `json:"caSHA256"`
}

// Map is the identity as the stack output holds it.
func (c ClusterIdentity) Map() map[string]string {
	return map[string]string{"server": c.Server, "caSHA256": c.CASHA256}
}

// ClusterIdentityOf reads the identity back from a stack output (a map of
// strings, as the checkpoint holds it); false when it is not one.
func ClusterIdentityOf(v any) (ClusterIdentity, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return ClusterIdentity{}, false
	}
	server, _ := m["server"].(string)
	ca, _ := m["caSHA256"].(string)
	if server == "" || ca == "" {
		return ClusterIdentity{}, false
	}
	return ClusterIdentity{Server: server, CASHA256: ca}, true
}

// KubeconfigCluster is the identity of the cluster the kubeconfig at path
// reaches through context (its current context when empty). A kubeconfig
// that names no CA (the system's roots, or TLS verification off) has no
// identity: any server could answer at that address.
func KubeconfigCluster(path, context string) (ClusterIdentity, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path},
		&clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	if err != nil {
		return ClusterIdentity{}, err
	}
	if cfg.Insecure {
		return ClusterIdentity{}, errors.New("the kubeconfig turns TLS verification off, so nothing vouches for its cluster")
	}
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			return ClusterIdentity{}, fmt.Errorf("the kubeconfig's certificate authority: %w", err)
		}
	}
	if len(ca) == 0 {
		return ClusterIdentity{}, errors.New("the kubeconfig names no certificate authority for its cluster")
	}
	sum := sha256.Sum256(ca)
	return ClusterIdentity{Server: cfg.Host, CASHA256: hex.EncodeToString(sum[:])}, nil
}
