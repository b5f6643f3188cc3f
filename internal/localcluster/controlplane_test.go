package localcluster

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/internal/loopbackport"
	"github.com/paddock-platform/paddock/internal/manifests"
)

// testCluster is a cluster in a temp dir with ports chosen, as create leaves it
// before the control plane starts.
func testCluster(t *testing.T, nodes string) *cluster {
	t.Helper()
	c := New(Options{Name: "unit", Dir: t.TempDir(), Nodes: nodes}).(*cluster)
	c.state = &clusterState{Name: "unit", Nodes: nodes, Binaries: map[string]string{},
		ControlPlane: controlPlanePorts{Etcd: 31001, EtcdPeer: 31002, APIServer: 31003, ControllerManager: 31004, Scheduler: 31005, Kwok: 31006}}
	return c
}

// No component listens beyond loopback, and etcd admits only the cluster's
// certificates: what kwokctl ran bound etcd, without TLS, and the API server on
// every address of the machine.
func TestControlPlaneListensOnLoopbackOnly(t *testing.T) {
	for _, nodes := range []string{NodesReal, NodesFake} {
		c := testCluster(t, nodes)
		for _, comp := range c.components() {
			args := c.componentArgs(comp.Name)
			if len(args) == 0 {
				t.Fatalf("%s: no arguments", comp.Name)
			}
			line := strings.Join(args, " ")
			for _, open := range []string{"0.0.0.0", "[::]", "http://"} {
				if strings.Contains(line, open) {
					t.Errorf("%s (%s nodes) names %q: %s", comp.Name, nodes, open, line)
				}
			}
			if !strings.Contains(line, c.controlPlaneDir()) {
				t.Errorf("%s: its command line does not name %s, by which Status and Down recognise it: %s", comp.Name, c.controlPlaneDir(), line)
			}
		}
		etcd := strings.Join(c.componentArgs("etcd"), " ")
		for _, want := range []string{"--client-cert-auth", "--peer-client-cert-auth", "--listen-client-urls=https://127.0.0.1:31001", "--listen-peer-urls=https://127.0.0.1:31002"} {
			if !strings.Contains(etcd, want) {
				t.Errorf("etcd lacks %s: %s", want, etcd)
			}
		}
		api := strings.Join(c.componentArgs("kube-apiserver"), " ")
		for _, want := range []string{"--bind-address=127.0.0.1", "--etcd-servers=https://127.0.0.1:31001", "--etcd-certfile=", "--authorization-mode=Node,RBAC", "--kubelet-preferred-address-types=InternalIP"} {
			if !strings.Contains(api, want) {
				t.Errorf("kube-apiserver lacks %s: %s", want, api)
			}
		}
		for _, name := range []string{"kube-controller-manager", "kube-scheduler"} {
			if line := strings.Join(c.componentArgs(name), " "); !strings.Contains(line, "--bind-address=127.0.0.1") {
				t.Errorf("%s does not bind loopback: %s", name, line)
			}
		}
	}
}

// The API server runs with Paddock's audit policy, written under the control
// plane's directory readable by its owner only, and logs to a bounded file
// whose path anyone with the cluster's directory can find (verify's V13).
func TestAPIServerAuditsToTheClusterDir(t *testing.T) {
	c := testCluster(t, NodesReal)
	if err := os.MkdirAll(c.controlPlaneDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(c.dir, "logs", "audit.log")
	if got := c.Where().AuditLog; got != logPath {
		t.Errorf("Where().AuditLog = %s, want %s", got, logPath)
	}
	policy := filepath.Join(c.dir, "controlplane", manifests.AuditPolicyFile)
	api := c.componentArgs("kube-apiserver")
	for _, want := range []string{
		"--audit-policy-file=" + policy, "--audit-log-path=" + logPath, "--audit-log-format=json",
		"--audit-log-mode=blocking", "--audit-log-maxsize=50", "--audit-log-maxbackup=2",
	} {
		if !slices.Contains(api, want) {
			t.Errorf("kube-apiserver lacks %s: %s", want, strings.Join(api, " "))
		}
	}
	// An older paddock's policy (or none) is replaced on every start.
	if err := os.WriteFile(policy, []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.writeAuditPolicy(); err != nil {
		t.Fatal(err)
	}
	want, err := manifests.AuditPolicyYAML()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(policy)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("audit policy file %q (%v), want the rendered policy", got, err)
	}
	if fi, err := os.Stat(policy); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("audit policy file mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
}

// kwok runs only for kwok nodes, and then fakes only nodes annotated as its own.
func TestKwokOnlyForFakeNodes(t *testing.T) {
	if got := componentNames(testCluster(t, NodesReal).components()); strings.Contains(got, "kwok") {
		t.Errorf("a real-node cluster runs %s", got)
	}
	c := testCluster(t, NodesFake)
	if got := componentNames(c.components()); !strings.Contains(got, "kwok-controller") {
		t.Errorf("a kwok-node cluster runs %s", got)
	}
	kwok := strings.Join(c.componentArgs("kwok-controller"), " ")
	for _, want := range []string{"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake", "--server-address=127.0.0.1:31006"} {
		if !strings.Contains(kwok, want) {
			t.Errorf("kwok lacks %s: %s", want, kwok)
		}
	}
}

func TestComponentEnvDropsRedirects(t *testing.T) {
	got := strings.Join(componentEnv([]string{"PATH=/bin", "ETCD_DATA_DIR=/x", "KWOK_WORKDIR=/y", "KUBECONFIG=/z", "HOME=/h"}), " ")
	if got != "PATH=/bin HOME=/h" {
		t.Errorf("componentEnv = %q", got)
	}
}

// The PKI chains to its CA, names loopback (and the kubernetes Service) on the
// serving certificates, makes the admin a system:masters client, and keeps every
// private key to its owner.
func TestWritePKI(t *testing.T) {
	dir := t.TempDir()
	svc, err := firstServiceIP(ServiceCIDR)
	if err != nil {
		t.Fatal(err)
	}
	if svc.String() != "10.96.0.1" {
		t.Errorf("first service IP of %s = %s", ServiceCIDR, svc)
	}
	if err := writePKI(dir, svc); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(readCert(t, pkiFile(dir, pkiCA, ".crt")))
	verify := func(name string, usage x509.ExtKeyUsage, host string) *x509.Certificate {
		t.Helper()
		cert := readCert(t, pkiFile(dir, name, ".crt"))
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{usage}, DNSName: host}); err != nil {
			t.Errorf("%s (host %q): %v", name, host, err)
		}
		return cert
	}
	api := verify(pkiAPIServer, x509.ExtKeyUsageServerAuth, "127.0.0.1")
	verify(pkiAPIServer, x509.ExtKeyUsageServerAuth, "kubernetes.default.svc")
	verify(pkiAPIServer, x509.ExtKeyUsageServerAuth, "10.96.0.1")
	for _, ip := range api.IPAddresses {
		if !ip.IsLoopback() && !ip.Equal(svc) {
			t.Errorf("API server certificate names %s, beyond loopback and the Service", ip)
		}
	}
	verify(pkiEtcd, x509.ExtKeyUsageServerAuth, "127.0.0.1")
	verify(pkiEtcd, x509.ExtKeyUsageClientAuth, "")
	verify(pkiEtcdClient, x509.ExtKeyUsageClientAuth, "")
	if admin := verify(pkiAdmin, x509.ExtKeyUsageClientAuth, ""); len(admin.Subject.Organization) != 1 || admin.Subject.Organization[0] != "system:masters" {
		t.Errorf("admin organization %v, want system:masters", admin.Subject.Organization)
	}
	if _, err := readCert(t, pkiFile(dir, pkiAdmin, ".crt")).Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("the admin client certificate also serves")
	}
	for _, name := range []string{pkiCA, pkiAPIServer, pkiAdmin, pkiEtcd, pkiEtcdClient, pkiServiceAcct} {
		fi, err := os.Stat(pkiFile(dir, name, ".key"))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s.key mode %v, want 0600", name, fi.Mode().Perm())
		}
	}
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s: no PEM", path)
	}
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// The ports are free, distinct and below the kernel's ephemeral range, where no
// outgoing connection takes one while its component is down.
func TestChoosePortsBelowEphemeralRange(t *testing.T) {
	dir := t.TempDir()
	p, err := choosePorts(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	lo := loopbackport.EphemeralLow()
	seen := map[int]bool{}
	for _, port := range []int{p.Etcd, p.EtcdPeer, p.APIServer, p.ControllerManager, p.Scheduler, p.Kwok} {
		if port <= 1024 || port >= lo || seen[port] {
			t.Errorf("port %d: want distinct ports in (1024, %d): %+v", port, lo, p)
		}
		seen[port] = true
	}
	// A taken port is skipped.
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p.Etcd)))
	if err != nil {
		t.Skipf("port %d was taken meanwhile: %v", p.Etcd, err)
	}
	defer l.Close()
	q, err := choosePorts(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, port := range []int{q.Etcd, q.EtcdPeer, q.APIServer, q.ControllerManager, q.Scheduler} {
		if port == p.Etcd {
			t.Errorf("chose the taken port %d", port)
		}
	}
	if q.Kwok != 0 {
		t.Errorf("a real-node cluster got a kwok port %d", q.Kwok)
	}
}
