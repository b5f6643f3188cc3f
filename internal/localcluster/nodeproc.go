// The real node's processes, run by the supervisor beside the Agent Sandbox
// controller: containerd (then the local images are imported), kubelet, the
// Cilium agent and the world hosts. Each is restarted with backoff when it exits;
// on the way out they stop in reverse order. What runs is reported in
// Dir/node.json. Once they run, the supervisor also keeps the world hosts' names
// and the resolver pod (clusterdns.go), and the agent's CNI configuration where
// containerd reads it.

package localcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/paddock-platform/paddock/internal/model"
)

const nodeReportFile = "node.json"

// nodeReport is Dir/node.json, written by the supervisor's node part.
type nodeReport struct {
	Supervisor int                     `json:"supervisor"`
	Procs      map[string]*nodeProcRep `json:"procs"`
}

type nodeProcRep struct {
	Proc     *procRecord `json:"proc,omitempty"`
	Starts   int         `json:"starts"`
	LastExit string      `json:"lastExit,omitempty"`
	Log      string      `json:"log"`
}

// nodeProcSpec is one node process.
type nodeProcSpec struct {
	Name string
	Bin  string
	Args []string
	Env  []string
	// Exe is the binary the process ends up running when Bin execs another
	// (the Cilium agent behind unshare and sh): the supervisor records the
	// process once it runs Exe, so that Status knows it by that binary.
	Exe string
	// AfterStart, when set, runs once the process runs Exe (or has started,
	// without Exe), with its pid; the func it returns runs when the process
	// has exited. An error stops the process (to be restarted with backoff).
	AfterStart func(pid int) (func(), error)
}

// nodeSpecs lists the node's processes in start order.
func (c *cluster) nodeSpecs() []nodeProcSpec {
	d := c.nodeDirs()
	nn := c.state.NodeNet
	bins := c.state.Binaries
	// containerd finds its shims (containerd-shim-runsc-v1, -runc-v2) on PATH.
	path := filepath.Dir(bins["containerd-shim-runsc-v1"]) + ":" + filepath.Dir(bins["containerd-shim-runc-v2"]) + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	env := []string{"PATH=" + path, "HOME=" + d.root, "LANG=C"}
	agentEnv := []string{"PATH=" + d.ciliumCompilerDir() + ":" + ciliumClangDir + ":" + path, "HOME=" + d.root, "LANG=C", "K8S_NODE_NAME=" + nodeName(c.name, 0)}
	args := ciliumAgentArgs(d, c.logsDir(), c.kubeconfig(), cgroup2Mount(), nn)
	specs := []nodeProcSpec{
		{Name: "containerd", Bin: bins["containerd"], Args: containerdArgs(d), Env: env},
		{Name: "kubelet", Bin: bins["kubelet"], Args: kubeletArgs(d, c.name, c.kubeconfig(), nn), Env: env},
		ciliumAgentProc(bins["cilium-agent"], d.ciliumSysctlShield(), args, agentEnv),
	}
	return append(specs, worldHostSpecs(env)...)
}

func (c *cluster) nodeDirs() nodeDirs { return nodeDirs{root: filepath.Join(c.dir, nodeDir)} }

// nodeRunner runs the node's processes for one supervisor.
type nodeRunner struct {
	c   *cluster
	log *log.Logger
	mu  sync.Mutex
	rep nodeReport
}

func (n *nodeRunner) write() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := writeJSON(filepath.Join(n.c.dir, nodeReportFile), &n.rep); err != nil && !errors.Is(err, os.ErrNotExist) {
		n.log.Printf("write %s: %v", nodeReportFile, err)
	}
}

// run starts every node process in order and keeps them running until ctx is
// done, then stops them in reverse order.
func (n *nodeRunner) run(ctx context.Context) {
	specs := n.c.nodeSpecs()
	n.rep = nodeReport{Supervisor: os.Getpid(), Procs: map[string]*nodeProcRep{}}
	for _, s := range specs {
		n.rep.Procs[s.Name] = &nodeProcRep{Log: filepath.Join(n.c.logsDir(), s.Name+".log")}
	}
	n.write()

	type running struct {
		cancel context.CancelFunc
		done   chan struct{}
	}
	var started []running
	defer func() {
		for i := len(started) - 1; i >= 0; i-- {
			started[i].cancel()
			<-started[i].done
		}
		n.write()
	}()
	for _, s := range specs {
		pctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func(s nodeProcSpec) { defer close(done); n.keep(pctx, s) }(s)
		started = append(started, running{cancel, done})
		var err error
		switch s.Name {
		case "containerd":
			err = n.afterContainerd(ctx)
		case "kubelet":
			err = n.waitNodeRegistered(ctx) // the agent waits on its node
		}
		if err != nil && ctx.Err() == nil {
			n.log.Printf("node: %v", err)
		}
		if ctx.Err() != nil {
			return
		}
	}
	dnsDone := make(chan struct{})
	go func() { defer close(dnsDone); n.keepClusterDNS(ctx) }()
	apiDone := make(chan struct{})
	go func() { defer close(apiDone); n.keepAPIServerRoute(ctx) }() // apiserverroute.go
	n.keepCNIConf(ctx)
	<-ctx.Done()
	<-dnsDone
	<-apiDone
}

// keepCNIConf mirrors the Cilium agent's CNI configuration into containerd's
// directory (syncCNIConf) until ctx is done.
func (n *nodeRunner) keepCNIConf(ctx context.Context) {
	d := n.c.nodeDirs()
	n.keepEvery(ctx, 250*time.Millisecond, "CNI configuration", func() (string, error) {
		return syncCNIConf(d.ciliumCNIStaged(), d.cniConf())
	})
}

// keepEvery calls ensure every interval until ctx is done. It logs what each
// call changed, and an error only when it differs from the one before, so a
// lasting fault is one line, not one a tick.
func (n *nodeRunner) keepEvery(ctx context.Context, interval time.Duration, what string, ensure func() (string, error)) {
	lastErr := ""
	for {
		did, err := ensure()
		switch {
		case ctx.Err() != nil:
			return
		case did != "":
			n.log.Printf("node: %s", did)
		}
		switch {
		case err == nil:
			lastErr = ""
		case err.Error() != lastErr:
			n.log.Printf("node: %s: %v", what, err)
			lastErr = err.Error()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// dnsKeepInterval is how often the supervisor looks at the resolver pod and the
// world hosts' names.
var dnsKeepInterval = 2 * time.Second

// keepClusterDNS keeps the world hosts' names and the resolver pod until ctx is
// done: it puts the names back when they are gone and recreates the pod when it
// is gone or ended (the kube-dns Service follows the pod's address). It logs
// what it changes, and an error once until it changes.
func (n *nodeRunner) keepClusterDNS(ctx context.Context) {
	cs, err := n.c.clientset(5 * time.Second)
	if err != nil {
		n.log.Printf("node: cluster resolver and world host names not kept: %v", err)
		return
	}
	n.keepEvery(ctx, dnsKeepInterval, "cluster DNS", func() (string, error) {
		// The world hosts' names first: the resolver pod reads them when it
		// starts, and a ConfigMap made after it reaches it only with the
		// kubelet's next sync, up to a minute later.
		names, namesErr := ensureWorldHostNames(ctx, cs)
		_, pod, err := resolverTarget(ctx, cs)
		if err == nil {
			err = namesErr
		}
		if pod != "" {
			pod = "cluster DNS: " + pod
		}
		return joinNonEmpty(names, pod), err
	})
}

// joinNonEmpty joins the parts that are not empty with "; ".
func joinNonEmpty(parts ...string) string {
	var kept []string
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "; ")
}

// afterContainerd waits for containerd's socket, then imports the node's images.
func (n *nodeRunner) afterContainerd(ctx context.Context) error {
	d := n.c.nodeDirs()
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.DialTimeout("unix", d.containerdSocket(), time.Second)
		if err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("containerd did not open %s within 30s: %v", d.containerdSocket(), err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	start := time.Now()
	var refs []string
	all := nodeImages()
	// The egress gateway's image, when writeNodeImages found its binary.
	if gw := model.LocalGatewayImage(); fileExists(filepath.Join(d.images(), imageFileName(gw))) {
		all = append(all, imageSpec{Ref: gw})
	} else {
		n.log.Printf("node: no egress gateway image (%s): build paddock-gateway beside paddock (`make build`) or set %s", gw, GatewayBinaryEnv)
	}
	for _, spec := range all {
		ref := spec.Ref
		refs = append(refs, ref)
		tar := filepath.Join(d.images(), imageFileName(ref))
		out, err := exec.CommandContext(ctx, n.c.state.Binaries["ctr"], "--address", d.containerdSocket(),
			"-n", "k8s.io", "images", "import", tar).CombinedOutput()
		if err != nil {
			return fmt.Errorf("import %s: %v: %s", tar, err, strings.TrimSpace(string(out)))
		}
	}
	n.log.Printf("node: images %s imported (%s)", strings.Join(refs, ", "), roundDuration(time.Since(start)))
	return nil
}

// waitNodeRegistered waits (up to 2 minutes) until the kubelet has registered its
// Node, then seeds the agent's CiliumNode (seedCiliumNode).
func (n *nodeRunner) waitNodeRegistered(ctx context.Context) error {
	cs, err := n.c.clientset(5 * time.Second)
	if err != nil {
		return err
	}
	name := nodeName(n.c.name, 0)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err == nil {
			break
		} else if time.Now().After(deadline) {
			return fmt.Errorf("node %s not registered after 2m (%v); starting the Cilium agent anyway", name, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	cfg, err := restConfig(n.c.kubeconfig(), 5*time.Second)
	if err != nil {
		return err
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := seedCiliumNode(ctx, dc, name, ciliumRouterIP(n.c.state.NodeNet), time.Minute); err != nil {
		return fmt.Errorf("%w; starting the Cilium agent anyway (its router address, and so its compiled datapath, will be new)", err)
	}
	return nil
}

// keep runs one process until stop is done, restarting it with backoff. Only
// stop ends it (not the supervisor's ctx): run stops the processes one by one, in
// reverse start order.
func (n *nodeRunner) keep(stop context.Context, s nodeProcSpec) {
	restartWithBackoff(stop, func(err error, backoff time.Duration) {
		n.log.Printf("node: %s exited (%s); restarting in %s", s.Name, describeExit(err), backoff)
	}, func() error { return n.runOnce(stop, s) })
}

// restartWithBackoff calls run again each time it returns, until stop is
// done: after a wait that doubles from backoffMin to backoffMax, and starts
// over once a run lasted stableRun. exited is told each ending and the wait.
func restartWithBackoff(stop context.Context, exited func(err error, backoff time.Duration), run func() error) {
	backoff := backoffMin
	for {
		started := time.Now()
		err := run()
		if stop.Err() != nil {
			return
		}
		if time.Since(started) >= stableRun {
			backoff = backoffMin
		}
		exited(err, backoff)
		select {
		case <-stop.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, backoffMax)
	}
}

// runOnce starts the process and waits for it; when stop is done first it stops
// it (SIGTERM, then SIGKILL after 15 s).
func (n *nodeRunner) runOnce(stop context.Context, s nodeProcSpec) error {
	rep := n.rep.Procs[s.Name]
	logf, err := os.OpenFile(rep.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "\n=== %s paddock supervisor %d: start %d: %s %s\n",
		time.Now().Format(time.RFC3339), os.Getpid(), rep.Starts+1, s.Bin, strings.Join(s.Args, " "))
	cmd := exec.Command(s.Bin, s.Args...)
	cmd.Dir = n.c.nodeDirs().root
	cmd.Env = s.Env
	cmd.Stdout, cmd.Stderr = logf, logf
	release, err := startTiedToThread(cmd)
	if err != nil {
		return err
	}
	defer release()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if err := joinNodeCgroup(n.c.name, cmd.Process.Pid); err != nil {
		n.log.Printf("node: %s (pid %d) stays outside the node cgroup: %v", s.Name, cmd.Process.Pid, err)
	}
	rec, rerr := recordProcess(cmd.Process.Pid)
	for i := 0; rerr == nil && s.Exe != "" && rec.Exe != s.Exe && i < 100; i++ {
		time.Sleep(50 * time.Millisecond)
		rec, rerr = recordProcess(cmd.Process.Pid)
	}
	if rerr != nil {
		rec = procRecord{PID: cmd.Process.Pid}
	}
	n.mu.Lock()
	rep.Proc, rep.Starts = &rec, rep.Starts+1
	n.mu.Unlock()
	n.write()
	n.log.Printf("node: %s started (pid %d)", s.Name, rec.PID)
	if s.AfterStart != nil {
		undo, err := s.AfterStart(rec.PID)
		if err != nil {
			n.log.Printf("node: %s: %v; stopping it", s.Name, err)
			_ = cmd.Process.Kill()
		} else if undo != nil {
			defer undo()
		}
	}

	var werr error
	stopped := false
	select {
	case werr = <-exited:
	case <-stop.Done():
		stopped = true
	}
	if stopped {
		n.log.Printf("node: stopping %s (pid %d)", s.Name, rec.PID)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	} else {
		werr = exitError(werr)
	}
	n.mu.Lock()
	rep.Proc = nil
	if werr != nil {
		rep.LastExit = werr.Error()
	}
	n.mu.Unlock()
	n.write()
	return werr
}

func readNodeReport(dir string) (*nodeReport, error) {
	var r nodeReport
	b, err := os.ReadFile(filepath.Join(dir, nodeReportFile))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// nodeComponents reports the node's processes for Status.
func (c *cluster) nodeComponents(supAlive bool) []ComponentStatus {
	rep, _ := readNodeReport(c.dir)
	var out []ComponentStatus
	nn := planNodeNet(c.name)
	if c.state != nil {
		nn = c.state.NodeNet
	}
	for _, name := range nn.nodeProcessNames() {
		var pr *nodeProcRep
		if rep != nil {
			pr = rep.Procs[name]
		}
		out = append(out, c.supervisedStatus(name, pr, supAlive, nil))
	}
	return out
}

// supervisedStatus is the status of a process the supervisor keeps (the
// node's, the observability ones) from its report pr (nil: never started).
// running, when set, refines a live process's status (its address, its
// health); the restart count is added last.
func (c *cluster) supervisedStatus(name string, pr *nodeProcRep, supAlive bool, running func(cs *ComponentStatus)) ComponentStatus {
	cs := ComponentStatus{Name: name, Log: filepath.Join(c.logsDir(), name+".log"), kind: kindNode}
	switch {
	case pr == nil || pr.Starts == 0:
		cs.State, cs.Detail = NotStarted, "the supervisor starts it"
	case pr.Proc == nil:
		cs.State, cs.Detail = Crashed, "exited ("+pr.LastExit+")"
		if supAlive {
			cs.Detail += "; supervisor restarts it"
		}
	default:
		cs.PID = pr.Proc.PID
		if ok, why := pr.Proc.alive(); !ok {
			cs.State, cs.Detail = Crashed, why
			break
		}
		cs.State = Running
		if running != nil {
			running(&cs)
		}
	}
	if pr != nil && pr.Starts > 1 {
		cs.Detail = strings.TrimPrefix(cs.Detail+fmt.Sprintf("; restarted %d×", pr.Starts-1), "; ")
	}
	return cs
}
