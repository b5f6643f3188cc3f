// The local stack's named destinations outside the cluster.
//
// A tenant's FQDN allow-list can only be shown with traffic to names outside
// the cluster, and nothing here may send traffic off the machine. So the real
// node on the Cilium dataplane gets a few world hosts of its own: each a
// network namespace the supervisor makes (held by a sleeping `unshare --net`),
// joined to the machine by a veth pair whose host side is named
// WorldLinkPrefix<N> (the only links the pod guard lets pod traffic leave the
// node by), with a TCP listener per port inside it, and a name the cluster
// resolver answers (DNSHostsConfigMap). To Cilium they are "world": toFQDNs
// rules apply to them exactly as to an LLM API on the internet. They vanish
// with their namespaces when the supervisor stops them.

package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// WorldHost is one named destination outside the cluster.
type WorldHost struct {
	// Name is the DNS name the cluster resolver answers with Addr.
	Name string
	// Index numbers its link (WorldLinkPrefix+Index) and its /30,
	// 10.215.Index.0/30: the machine's side is .1, the host's .2.
	Index int
	// Ports are the TCP ports it accepts connections on.
	Ports []int
}

// WorldHosts are the local stack's named destinations. The names are under
// .test (RFC 6761), which no real resolver answers. Three, so that an
// allow-list can name one exactly, match one by a wildcard and leave one out.
var WorldHosts = []WorldHost{
	{Name: "api.llm.paddock.test", Index: 1, Ports: []int{443, 80}},
	{Name: "pypi.mirror.paddock.test", Index: 2, Ports: []int{443}},
	{Name: "collector.exfil.paddock.test", Index: 3, Ports: []int{443}},
}

// WorldHostNames are the names of WorldHosts, in order.
func WorldHostNames() []string {
	out := make([]string, len(WorldHosts))
	for i, h := range WorldHosts {
		out[i] = h.Name
	}
	return out
}

// WorldGreeting is what every world host writes to a connection before it
// closes it: the host's name after this prefix, so a probe knows which host
// it reached.
const WorldGreeting = "paddock-world "

// Addr is the host's own address.
func (h WorldHost) Addr() string { return fmt.Sprintf("10.215.%d.2", h.Index) }

// gateway is the machine's address on the host's link (its default route).
func (h WorldHost) gateway() string { return fmt.Sprintf("10.215.%d.1", h.Index) }

// Link is the host-side name of its veth pair.
func (h WorldHost) Link() string { return WorldLinkPrefix + strconv.Itoa(h.Index) }

// procName is its holder's name among the node's processes.
func (h WorldHost) procName() string { return "world-" + h.Name }

// worldHostsFile is the hosts-file text the resolver reads for WorldHosts.
func worldHostsFile() string {
	var b strings.Builder
	b.WriteString("# paddock local up: the local stack's world hosts\n")
	for _, h := range WorldHosts {
		fmt.Fprintf(&b, "%s %s\n", h.Addr(), h.Name)
	}
	return b.String()
}

// worldHostSpecs are the holders of the world hosts, as node processes: a
// sleeping process in a network namespace of its own; AfterStart links the
// namespace to the machine and opens the listeners.
func worldHostSpecs(env []string) []nodeProcSpec {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		sleep = "/bin/sleep" // coreutils: on every machine this runs on
	}
	if real, err := filepath.EvalSymlinks(sleep); err == nil {
		sleep = real
	}
	var out []nodeProcSpec
	for _, h := range WorldHosts {
		out = append(out, nodeProcSpec{
			Name: h.procName(), Bin: "unshare", Args: []string{"--net", "--", sleep, "infinity"}, Env: env,
			Exe: sleep, AfterStart: func(pid int) (func(), error) { return startWorldHost(h, pid) },
		})
	}
	return out
}

// startWorldHost links the namespace of pid (a holder that has made its own
// network namespace) to the machine and opens the host's listeners in it; the
// returned func closes them. The link goes with the namespace.
func startWorldHost(h WorldHost, pid int) (func(), error) {
	p := strconv.Itoa(pid)
	in := func(args ...string) []string { return append([]string{"nsenter", "-t", p, "-n"}, args...) }
	_ = exec.Command("ip", "link", "del", h.Link()).Run() // a previous holder's, should its namespace linger
	for _, cmd := range [][]string{
		{"ip", "link", "add", h.Link(), "type", "veth", "peer", "name", "w0", "netns", p},
		{"ip", "addr", "add", h.gateway() + "/30", "dev", h.Link()},
		{"ip", "link", "set", h.Link(), "up"},
		in("ip", "addr", "add", h.Addr()+"/30", "dev", "w0"),
		in("ip", "link", "set", "w0", "up"),
		in("ip", "link", "set", "lo", "up"),
		in("ip", "route", "add", "default", "via", h.gateway()),
	} {
		if out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("world host %s: %s: %v: %s", h.Name, strings.Join(cmd, " "), err, strings.TrimSpace(string(out)))
		}
	}
	var listeners []net.Listener
	closeAll := func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}
	for _, port := range h.Ports {
		l, err := ListenInNetns(pid, net.JoinHostPort(h.Addr(), strconv.Itoa(port)))
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("world host %s: %w", h.Name, err)
		}
		listeners = append(listeners, l)
		go serveGreeting(l, WorldGreeting+h.Name+"\n")
	}
	return closeAll, nil
}

// serveGreeting writes greeting to every connection and closes it, until l
// is closed.
func serveGreeting(l net.Listener, greeting string) {
	for {
		conn, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // a transient accept error (EMFILE)
			continue
		}
		_ = conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
		_, _ = io.WriteString(conn, greeting)
		_ = conn.Close()
	}
}

// ListenInNetns opens a TCP listener inside the network namespace of pid (a
// world host's holder, or one an e2e test serves a destination of its own in).
// The socket is made on a thread that enters the namespace and is never
// handed back: the goroutine ends locked, so the runtime retires the thread
// rather than let another goroutine run in that namespace.
func ListenInNetns(pid int, addr string) (net.Listener, error) {
	type result struct {
		l   net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{err: fmt.Errorf("enter the network namespace of pid %d: %w", pid, err)}
			return
		}
		l, err := net.Listen("tcp", addr)
		ch <- result{l, err}
	}()
	r := <-ch
	return r.l, r.err
}

// ensureWorldHostNames keeps DNSHostsConfigMap saying the world hosts' names
// and the test hosts' (DNSTestHostsConfigMap, its lines that pass
// testHostLines): it creates it, or puts that text back when it says
// anything else.
func ensureWorldHostNames(ctx context.Context, cs kubernetes.Interface) (did string, err error) {
	cms := cs.CoreV1().ConfigMaps(DNSNamespace)
	text := worldHostsFile()
	switch tcm, err := cms.Get(ctx, DNSTestHostsConfigMap, metav1.GetOptions{}); {
	case err == nil:
		text += testHostLines(tcm.Data["hosts"])
	case !apierrors.IsNotFound(err):
		return "", err
	}
	want := map[string]string{"hosts": text}
	cm, err := cms.Get(ctx, DNSHostsConfigMap, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = cms.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: DNSHostsConfigMap, Namespace: DNSNamespace, Labels: map[string]string{"app.kubernetes.io/managed-by": "paddock"}},
			Data:       want,
		}, metav1.CreateOptions{FieldManager: "paddock-local"})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("the resolver answers the world hosts' names (%s)", strings.Join(sortedNames(), ", ")), nil
	case err != nil:
		return "", err
	case cm.Data["hosts"] == want["hosts"] && len(cm.Data) == 1:
		return "", nil
	}
	onlyTestHosts := len(cm.Data) == 1 && strings.HasPrefix(cm.Data["hosts"], worldHostsFile())
	cm.Data = want
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "paddock-local"}); err != nil {
		return "", err
	}
	if onlyTestHosts {
		return "the resolver's names follow " + DNSNamespace + "/" + DNSTestHostsConfigMap + ": " + strings.Join(strings.Fields(testHostLines(want["hosts"][len(worldHostsFile()):])), " "), nil
	}
	return "the world hosts' names were changed in " + DNSNamespace + "/" + DNSHostsConfigMap + ": put back", nil
}

func sortedNames() []string {
	n := WorldHostNames()
	sort.Strings(n)
	return n
}
