package targets

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeKubeconfig writes a kubeconfig whose one context reaches server,
// vouched for by ca (inline, or in a file when caFile), with token as the
// credential.
func writeKubeconfig(t *testing.T, dir, server, ca, token string, caFile bool) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cluster := "    certificate-authority-data: " + b64(ca) + "\n"
	switch {
	case ca == "":
		cluster = ""
	case caFile:
		f := filepath.Join(dir, "ca.crt")
		if err := os.WriteFile(f, []byte(ca), 0o600); err != nil {
			t.Fatal(err)
		}
		cluster = "    certificate-authority: " + f + "\n"
	}
	kc := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " + server + "\n" + cluster +
		"users:\n- name: u\n  user:\n    token: " + token + "\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n"
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestKubeconfigCluster(t *testing.T) {
	root := t.TempDir()
	const ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	a, err := KubeconfigCluster(writeKubeconfig(t, filepath.Join(root, "a"), "https://127.0.0.1:6443", ca, "token-a", false), "")
	if err != nil {
		t.Fatal(err)
	}
	// Another runner: its own path, its own credential, the CA in a file.
	b, err := KubeconfigCluster(writeKubeconfig(t, filepath.Join(root, "b"), "https://127.0.0.1:6443", ca, "token-b", true), "x")
	if err != nil {
		t.Fatal(err)
	}
	if a != b || a.Server != "https://127.0.0.1:6443" || len(a.CASHA256) != 64 {
		t.Errorf("one cluster behind two kubeconfigs: %+v and %+v", a, b)
	}
	if got, ok := ClusterIdentityOf(map[string]any{"server": a.Server, "caSHA256": a.CASHA256}); !ok || got != a {
		t.Errorf("read back from the output: %+v %v", got, ok)
	}

	// Another CA at the same address is another cluster.
	other, err := KubeconfigCluster(writeKubeconfig(t, filepath.Join(root, "c"), "https://127.0.0.1:6443", ca+"x", "token-a", false), "")
	if err != nil || other == a {
		t.Errorf("another CA: %+v %v", other, err)
	}

	// No CA, or TLS verification off: no identity.
	if id, err := KubeconfigCluster(writeKubeconfig(t, filepath.Join(root, "d"), "https://127.0.0.1:6443", "", "t", false), ""); err == nil {
		t.Errorf("a kubeconfig without a CA has an identity: %+v", id)
	}
	insecure := filepath.Join(root, "e", "kubeconfig")
	os.MkdirAll(filepath.Dir(insecure), 0o700)
	os.WriteFile(insecure, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:6443\n    insecure-skip-tls-verify: true\ncontexts:\n- name: x\n  context:\n    cluster: c\ncurrent-context: x\n"), 0o600)
	if _, err := KubeconfigCluster(insecure, ""); err == nil || !strings.Contains(err.Error(), "TLS verification off") {
		t.Errorf("insecure kubeconfig: %v", err)
	}
	if _, err := KubeconfigCluster(filepath.Join(root, "missing"), ""); err == nil {
		t.Error("a missing kubeconfig has an identity")
	}
	for _, v := range []any{nil, "x", map[string]any{"server": "s"}, map[string]any{"server": 1, "caSHA256": "c"}} {
		if _, ok := ClusterIdentityOf(v); ok {
			t.Errorf("%#v read as an identity", v)
		}
	}
}
