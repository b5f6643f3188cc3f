// A test's own destinations outside the cluster.
//
// The world hosts are the stack's; a test that must show a destination of
// its own (a TLS server with a CA it made) makes a test host: a network
// namespace of its own, linked to the machine like a world host (so the pod
// guard lets pod traffic reach it and Cilium sees it as "world"), and a name
// the cluster resolver answers once the test writes it into
// DNSTestHostsConfigMap. The test owns both and removes both.

package localcluster

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// DNSTestHostsConfigMap, in DNSNamespace, holds the names of test hosts in
// hosts-file form under "hosts". The supervisor adds its lines that name a
// test host's address (testHostLines) to what the resolver reads; a line
// that would rename a world host, or send a name anywhere else, is left
// out.
const DNSTestHostsConfigMap = "paddock-dns-test-hosts"

// MinTestHostIndex is the lowest index a test host may take: those below
// are the world hosts' (and room for more).
const MinTestHostIndex = 16

// testHostPrefix holds every world and test host's /30.
var testHostPrefix = netip.MustParsePrefix("10.215.0.0/16")

// testHostLines are the lines of text that name a test host: an address of
// 10.215.N.2 with N at least MinTestHostIndex, and names under .test that
// are no world host's.
func testHostLines(text string) string {
	var b strings.Builder
	for line := range strings.SplitSeq(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || strings.HasPrefix(f[0], "#") {
			continue
		}
		a, err := netip.ParseAddr(f[0])
		if err != nil || !a.Is4() || !testHostPrefix.Contains(a) || a.As4()[2] < MinTestHostIndex || a.As4()[3] != 2 {
			continue
		}
		names := f[1:]
		if slices.ContainsFunc(names, func(n string) bool {
			return !strings.HasSuffix(n, ".test") || slices.Contains(WorldHostNames(), n)
		}) {
			continue
		}
		fmt.Fprintf(&b, "%s %s\n", a, strings.Join(names, " "))
	}
	return b.String()
}

// TestHost is a network namespace a test made, linked to the machine as a
// world host is. It has no listener: the test opens its own (ListenInNetns).
type TestHost struct {
	WorldHost
	holder *exec.Cmd
}

// StartTestHost makes a test host named name with index (at least
// MinTestHostIndex, and no other live host's). Stop removes it.
func StartTestHost(name string, index int) (*TestHost, error) {
	if index < MinTestHostIndex || index > 255 {
		return nil, fmt.Errorf("test host %s: index %d, want %d to 255", name, index, MinTestHostIndex)
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		return nil, err
	}
	h := &TestHost{WorldHost: WorldHost{Name: name, Index: index}}
	h.holder = exec.Command("unshare", "--net", "--", sleep, "infinity")
	// The holder dies with the test's process, so a killed test leaves no
	// namespace (its link goes with it).
	h.holder.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := h.holder.Start(); err != nil {
		return nil, fmt.Errorf("test host %s: %w", name, err)
	}
	if err := waitOwnNetns(h.holder.Process.Pid, 10*time.Second); err != nil {
		h.Stop()
		return nil, fmt.Errorf("test host %s: %w", name, err)
	}
	if _, err := startWorldHost(h.WorldHost, h.holder.Process.Pid); err != nil {
		h.Stop()
		return nil, err
	}
	return h, nil
}

// PID is the holder's: the namespace to open listeners in.
func (h *TestHost) PID() int { return h.holder.Process.Pid }

// Stop ends the holder; its namespace and link go with it.
func (h *TestHost) Stop() {
	if h.holder == nil || h.holder.Process == nil {
		return
	}
	_ = h.holder.Process.Kill()
	_ = h.holder.Wait()
	_ = exec.Command("ip", "link", "del", h.Link()).Run() // gone already, unless the kernel is slow to reap
}

// waitOwnNetns waits until pid runs in a network namespace other than this
// process's: unshare has made it and exec'd its command.
func waitOwnNetns(pid int, within time.Duration) error {
	self, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		return err
	}
	deadline := time.Now().Add(within)
	for {
		ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
		if err == nil && ns != self {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pid %d has no network namespace of its own after %s (%v)", pid, within, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// NameTestHosts makes the cluster resolver answer the hosts' names (through
// DNSTestHostsConfigMap, which it replaces): the supervisor adds them within
// a few seconds, and the resolver's pod reads them when its kubelet next
// syncs the volume, up to a minute or so later.
func NameTestHosts(ctx context.Context, cs kubernetes.Interface, hosts ...WorldHost) error {
	var b strings.Builder
	for _, h := range hosts {
		fmt.Fprintf(&b, "%s %s\n", h.Addr(), h.Name)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: DNSTestHostsConfigMap, Namespace: DNSNamespace},
		Data:       map[string]string{"hosts": b.String()},
	}
	cms := cs.CoreV1().ConfigMaps(DNSNamespace)
	_, err := cms.Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	}
	return err
}

// UnnameTestHosts removes every test host's name from the resolver.
func UnnameTestHosts(ctx context.Context, cs kubernetes.Interface) error {
	err := cs.CoreV1().ConfigMaps(DNSNamespace).Delete(ctx, DNSTestHostsConfigMap, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
