// The control plane: etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler (and kwok's controller for fake nodes), started by Up as detached
// processes of their own session, each with a pid file, so they outlive the
// `paddock local up` that started them and Status, Up and Down find them again.
//
// Every one listens on loopback only: nothing on the machine's network, and no pod
// (a pod's loopback is its own), reaches etcd or the API server. etcd speaks TLS
// and admits only certificates of the cluster's CA (pki.go), so a local process
// without the cluster's keys cannot read or write the store behind the API server.

package localcluster

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/paddock-platform/paddock/internal/loopbackport"
	"github.com/paddock-platform/paddock/internal/manifests"
)

// cpComponent is one control plane process. Name names its pid and log files; Tool
// is the pinned tool (paths.Tool) whose binary it runs.
type cpComponent struct {
	Name, Tool string
	fakeOnly   bool // runs only on a cluster of kwok nodes
}

// controlPlane lists every component in start order.
var controlPlane = []cpComponent{
	{Name: "etcd", Tool: "etcd"},
	{Name: "kube-apiserver", Tool: "kube-apiserver"},
	{Name: "kube-controller-manager", Tool: "kube-controller-manager"},
	{Name: "kube-scheduler", Tool: "kube-scheduler"},
	{Name: "kwok-controller", Tool: "kwok", fakeOnly: true},
}

// controlPlaneTools are the pinned tools every cluster needs; kwok is added for a
// cluster of kwok nodes (fakeNodeTool).
var controlPlaneTools = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "agent-sandbox-controller"}

const fakeNodeTool = "kwok"

// components are the control plane processes of this cluster, in start order.
func (c *cluster) components() []cpComponent {
	var out []cpComponent
	for _, comp := range controlPlane {
		if comp.fakeOnly && c.state.real() {
			continue
		}
		out = append(out, comp)
	}
	return out
}

// controlPlanePorts are the loopback ports chosen at Up.
type controlPlanePorts struct {
	Etcd              int `json:"etcd"`
	EtcdPeer          int `json:"etcdPeer"`
	APIServer         int `json:"apiServer"`
	ControllerManager int `json:"controllerManager"`
	Scheduler         int `json:"scheduler"`
	Kwok              int `json:"kwok,omitempty"`
}

func (c *cluster) controlPlaneDir() string { return filepath.Join(c.dir, controlPlaneDir) }
func (c *cluster) pkiDir() string          { return filepath.Join(c.controlPlaneDir(), "pki") }
func (c *cluster) pki(name, ext string) string {
	return pkiFile(c.pkiDir(), name, ext)
}

// componentKubeconfig is the kubeconfig the components use: the admin identity,
// under controlPlaneDir so that every component's command line names the cluster's
// directory (inspectComponent tells this cluster's processes apart by it), and
// apart from Dir/kubeconfig, which is the user's to point tools at.
func (c *cluster) componentKubeconfig() string {
	return filepath.Join(c.controlPlaneDir(), "kubeconfig")
}

// auditPolicy is the API server's audit policy file; auditLog is where it
// writes the events, beside the components' logs.
func (c *cluster) auditPolicy() string {
	return filepath.Join(c.controlPlaneDir(), manifests.AuditPolicyFile)
}
func (c *cluster) auditLog() string { return filepath.Join(c.logsDir(), auditLog) }

// Bounds of the audit log: the API server rotates it at auditLogMaxMB and keeps
// auditLogBackups rotated files, so it never holds more than
// (1+auditLogBackups)*auditLogMaxMB on disk.
const (
	auditLogMaxMB   = 50
	auditLogBackups = 2
)

// writeAuditPolicy writes this paddock's audit policy for the API server,
// readable by its owner only, replacing the one an older paddock wrote (it is
// read when the API server starts).
func (c *cluster) writeAuditPolicy() error {
	b, err := manifests.AuditPolicyYAML()
	if err != nil {
		return err
	}
	path := c.auditPolicy()
	tmp := path + ".tmp"
	_ = os.Remove(tmp) // WriteFile keeps the mode of a file that exists
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write the API server's audit policy: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write the API server's audit policy: %w", err)
	}
	return nil
}

func (c *cluster) componentPIDFile(name string) string {
	return filepath.Join(c.controlPlaneDir(), "pids", name+".pid")
}

func (c *cluster) componentLog(name string) string {
	return filepath.Join(c.logsDir(), name+".log")
}

// choosePorts picks the control plane's ports for the cluster in dir: free
// ones just below the kernel's ephemeral range (loopbackport.Reserved). A
// port inside that range could be taken by any outgoing connection while its
// component is stopped (a fault test, a crash), and the component could not
// come back on the port its kubeconfig names.
func choosePorts(dir string, fake bool) (controlPlanePorts, error) {
	n := 5
	if fake {
		n = 6
	}
	got, err := loopbackport.Reserved(dir, n)
	if err != nil {
		return controlPlanePorts{}, err
	}
	ports := controlPlanePorts{Etcd: got[0], EtcdPeer: got[1], APIServer: got[2], ControllerManager: got[3], Scheduler: got[4]}
	if fake {
		ports.Kwok = got[5]
	}
	return ports, nil
}

// prepareControlPlane writes the PKI and both kubeconfigs of a new cluster.
func (c *cluster) prepareControlPlane() error {
	for _, d := range []string{c.controlPlaneDir(), filepath.Join(c.controlPlaneDir(), "pids"), filepath.Join(c.controlPlaneDir(), "etcd")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	svc, err := firstServiceIP(ServiceCIDR)
	if err != nil {
		return err
	}
	if err := writePKI(c.pkiDir(), svc); err != nil {
		return fmt.Errorf("write the cluster's certificates: %w", err)
	}
	for _, path := range []string{c.componentKubeconfig(), c.kubeconfig()} {
		if err := c.writeKubeconfig(path); err != nil {
			return err
		}
	}
	return nil
}

// kubeContext is the kubeconfig context (and cluster and user) name: "paddock"
// for the default cluster, "paddock-NAME" for another.
func kubeContext(name string) string {
	if name == DefaultName {
		return "paddock"
	}
	return "paddock-" + name
}

func (c *cluster) writeKubeconfig(path string) error {
	name := kubeContext(c.name)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{
		Server:               "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(c.state.ControlPlane.APIServer)),
		CertificateAuthority: c.pki(pkiCA, ".crt"),
	}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{
		ClientCertificate: c.pki(pkiAdmin, ".crt"),
		ClientKey:         c.pki(pkiAdmin, ".key"),
	}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}

// componentArgs is one component's command line (without the binary).
func (c *cluster) componentArgs(name string) []string {
	p := c.state.ControlPlane
	loop := func(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
	kc := c.componentKubeconfig()
	// The controller manager's and scheduler's own health endpoints answer without
	// credentials, on loopback.
	healthOpen := "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"
	switch name {
	case "etcd":
		peer, client := "https://"+loop(p.EtcdPeer), "https://"+loop(p.Etcd)
		return []string{
			"--name=node0",
			"--data-dir=" + filepath.Join(c.controlPlaneDir(), "etcd"),
			"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
			"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
			"--initial-cluster=node0=" + peer,
			"--cert-file=" + c.pki(pkiEtcd, ".crt"), "--key-file=" + c.pki(pkiEtcd, ".key"),
			"--client-cert-auth", "--trusted-ca-file=" + c.pki(pkiCA, ".crt"),
			"--peer-cert-file=" + c.pki(pkiEtcd, ".crt"), "--peer-key-file=" + c.pki(pkiEtcd, ".key"),
			"--peer-client-cert-auth", "--peer-trusted-ca-file=" + c.pki(pkiCA, ".crt"),
			"--auto-compaction-retention=1",
			"--quota-backend-bytes=8589934592",
		}
	case "kube-apiserver":
		return append([]string{
			"--etcd-servers=https://" + loop(p.Etcd),
			"--etcd-cafile=" + c.pki(pkiCA, ".crt"),
			"--etcd-certfile=" + c.pki(pkiEtcdClient, ".crt"), "--etcd-keyfile=" + c.pki(pkiEtcdClient, ".key"),
			"--etcd-prefix=/registry",
			"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(p.APIServer),
			"--tls-cert-file=" + c.pki(pkiAPIServer, ".crt"), "--tls-private-key-file=" + c.pki(pkiAPIServer, ".key"),
			"--client-ca-file=" + c.pki(pkiCA, ".crt"),
			"--authorization-mode=Node,RBAC",
			"--allow-privileged=true",
			"--service-account-key-file=" + c.pki(pkiServiceAcct, ".pub"),
			"--service-account-signing-key-file=" + c.pki(pkiServiceAcct, ".key"),
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			// Services get addresses from ServiceCIDR (the default, 10.0.0.0/24, would
			// not hold the conventional kube-dns address DNSServiceIP).
			"--service-cluster-ip-range=" + ServiceCIDR,
			// The kubelet is reached by its node IP (no DNS names nodes here), with
			// the admin certificate, whose CA the kubelet trusts.
			"--kubelet-preferred-address-types=InternalIP",
			"--kubelet-client-certificate=" + c.pki(pkiAdmin, ".crt"), "--kubelet-client-key=" + c.pki(pkiAdmin, ".key"),
			// Who changed the sandbox resources and the tenants' fence
			// (manifests.Audit), as JSON lines that verify reads (V13). The
			// blocking backend writes each event in the request's own
			// goroutine as the request completes, not in batches later; the
			// API server creates the log readable by its owner only and
			// rotates it, keeping a bounded number of files.
			"--audit-policy-file=" + c.auditPolicy(),
			"--audit-log-path=" + c.auditLog(),
			"--audit-log-format=json",
			"--audit-log-mode=blocking",
			"--audit-log-maxsize=" + strconv.Itoa(auditLogMaxMB),
			"--audit-log-maxbackup=" + strconv.Itoa(auditLogBackups),
		}, c.apiServerRouteArgs()...)
	case "kube-controller-manager":
		args := []string{
			"--kubeconfig=" + kc,
			"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(p.ControllerManager), healthOpen,
			"--root-ca-file=" + c.pki(pkiCA, ".crt"),
			"--service-account-private-key-file=" + c.pki(pkiServiceAcct, ".key"),
			// kwok's nodes renew their lease every 200s; a real kubelet far more often.
			"--node-monitor-period=25s", "--node-monitor-grace-period=3m20s",
		}
		if nn := c.state.NodeNet; c.state.real() {
			// The Cilium agent takes pod addresses from its node's PodCIDR (no
			// operator runs): the one node gets the whole range.
			args = append(args, "--allocate-node-cidrs=true", "--cluster-cidr="+nn.PodCIDR, "--node-cidr-mask-size=24")
		}
		return args
	case "kube-scheduler":
		return []string{
			"--kubeconfig=" + kc,
			"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(p.Scheduler), healthOpen,
		}
	case "kwok-controller":
		// kwok fakes only the nodes annotated as its own (kube.go), never a real one.
		return []string{
			"--kubeconfig=" + kc,
			"--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
			"--server-address=" + loop(p.Kwok),
			"--node-name=localhost", "--node-port=" + strconv.Itoa(p.Kwok),
			"--node-lease-duration-seconds=200",
		}
	}
	return nil
}

func componentNames(comps []cpComponent) string {
	var names []string
	for _, comp := range comps {
		names = append(names, comp.Name)
	}
	return strings.Join(names, ", ")
}

// componentEnv is the environment of a component: the caller's, without settings
// that would reconfigure it behind its command line (etcd reads ETCD_*, kwok KWOK_*)
// or point it at another cluster (KUBECONFIG).
func componentEnv(base []string) []string {
	var env []string
	for _, kv := range base {
		if strings.HasPrefix(kv, "ETCD_") || strings.HasPrefix(kv, "KWOK_") || strings.HasPrefix(kv, "KUBECONFIG=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// startControlPlane starts every component of this cluster that is not running,
// in order. It does not wait: etcd's clients retry, and waitAPI waits for the
// API server, naming the log of a component that exits meanwhile.
func (c *cluster) startControlPlane() error {
	if err := os.MkdirAll(c.logsDir(), 0o755); err != nil {
		return err
	}
	if err := c.writeAuditPolicy(); err != nil {
		return err
	}
	for _, comp := range c.components() {
		if c.inspectComponent(comp).Owned {
			continue
		}
		if err := c.startComponent(comp); err != nil {
			return fmt.Errorf("start %s: %w", comp.Name, err)
		}
	}
	return nil
}

func (c *cluster) startComponent(comp cpComponent) error {
	bin := c.state.Binaries[comp.Tool]
	if bin == "" {
		return fmt.Errorf("no %s binary recorded; run `make tools`", comp.Tool)
	}
	logPath := c.componentLog(comp.Name)
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	args := c.componentArgs(comp.Name)
	fmt.Fprintf(logf, "\n=== %s paddock starts %s %s\n", time.Now().Format(time.RFC3339), bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Dir = c.controlPlaneDir()
	cmd.Env = componentEnv(os.Environ())
	cmd.Stdout, cmd.Stderr = logf, logf
	// A session of its own: the component outlives `paddock local up`, and a
	// signal to that command's process group (a terminal's Ctrl-C, a CI timeout)
	// does not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release()
	return os.WriteFile(c.componentPIDFile(comp.Name), []byte(strconv.Itoa(pid)+"\n"), 0o644)
}

// componentInfo is what Status and Down know about one component.
type componentInfo struct {
	Name    string
	PID     int  // from the pid file; 0 when there is none
	PIDFile bool // a pid file exists
	Owned   bool // the pid is alive and is this cluster's binary
	Reason  string
}

// inspectComponent reads a component's pid file and checks that the pid is alive,
// runs the pinned binary and belongs to this cluster's directory.
func (c *cluster) inspectComponent(comp cpComponent) componentInfo {
	want := ""
	if c.state != nil {
		want = c.state.Binaries[comp.Tool]
	}
	if want == "" {
		want = comp.Tool
	}
	return inspectPIDFile(comp.Name, c.componentPIDFile(comp.Name), resolveExe(want), c.controlPlaneDir())
}

// inspectPIDFile reads pidFile and matches its process against wantExe and the
// marker directory its command line must name.
func inspectPIDFile(name, pidFile, wantExe, marker string) componentInfo {
	ci := componentInfo{Name: name}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		ci.Reason = "no pid file"
		return ci
	}
	ci.PIDFile = true
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || pid <= 0 {
		ci.Reason = "unreadable pid file"
		return ci
	}
	ci.PID = pid
	info, err := inspect(pid)
	if err != nil {
		ci.Reason = fmt.Sprintf("pid %d is not running", pid)
		return ci
	}
	ci.Owned, ci.Reason = matchBinary(info, wantExe, marker)
	return ci
}

// forgetStalePIDs removes pid files whose pid is dead or now belongs to a process
// this cluster did not start, so that nothing ever signals it.
func (c *cluster) forgetStalePIDs() {
	for _, comp := range c.components() {
		ci := c.inspectComponent(comp)
		if ci.PIDFile && !ci.Owned {
			_ = os.Remove(c.componentPIDFile(comp.Name))
		}
	}
}

// stopComponents stops the components this cluster started, in reverse start
// order, verifying each pid before every signal, and removes their pid files.
// Every component is looked for, whatever the node kind, so a state file that
// lost its node kind still stops everything.
func (c *cluster) stopComponents() error {
	var errs []error
	for i := len(controlPlane) - 1; i >= 0; i-- {
		comp := controlPlane[i]
		if err := stopByPIDFile(c.inspectComponent(comp), c.componentPIDFile(comp.Name), func() componentInfo { return c.inspectComponent(comp) }); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func stopByPIDFile(ci componentInfo, pidFile string, again func() componentInfo) error {
	if ci.Owned {
		if _, err := stopVerified(ci.PID, func() bool { return again().Owned }, 10*time.Second); err != nil {
			return fmt.Errorf("%s: %w", ci.Name, err)
		}
	}
	if ci.PIDFile {
		_ = os.Remove(pidFile)
	}
	return nil
}

// legacyKwokDir is where a paddock before 2026-12 had kwokctl keep a cluster's
// control plane (pki, pids, logs). Down and a new Up stop what it names.
func (c *cluster) legacyKwokDir() string {
	return filepath.Join(c.dir, legacyKwokDir, "clusters", c.name)
}

// stopLegacyControlPlane stops a control plane kwokctl started for an older
// paddock, by kwokctl's pid files, and removes kwokctl's directory.
func (c *cluster) stopLegacyControlPlane() error {
	dir := c.legacyKwokDir()
	if _, err := os.Stat(dir); err != nil {
		return nil
	}
	var errs []error
	for i := len(controlPlane) - 1; i >= 0; i-- {
		comp := controlPlane[i]
		pidFile := filepath.Join(dir, "pids", comp.Name+".pid")
		look := func() componentInfo { return inspectPIDFile(comp.Name, pidFile, comp.Tool, dir) }
		if err := stopByPIDFile(look(), pidFile, look); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return os.RemoveAll(filepath.Join(c.dir, legacyKwokDir))
}

// indentTail returns the last n lines of s, indented, prefixed by a newline; "" if s
// is blank.
func indentTail(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	if strings.TrimSpace(s) == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "\n    " + strings.Join(lines, "\n    ")
}
