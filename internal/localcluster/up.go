// Up: create the local cluster, or bring an existing one back and repair it.

package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/paddock-platform/paddock/internal/loopbackport"
	"github.com/paddock-platform/paddock/internal/paths"
	"github.com/paddock-platform/paddock/internal/pins"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func (c *cluster) Up(ctx context.Context) (*Info, error) {
	if c.err != nil {
		return nil, c.err
	}
	bins, err := resolveTools()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return nil, err
	}
	unlock, err := c.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()

	st, err := readState(c.dir)
	switch {
	case err == nil && st.Name != c.name:
		return nil, fmt.Errorf("%s holds local cluster %q, not %q; run `paddock local down --name %s` first or choose another directory",
			c.dir, st.Name, c.name, st.Name)
	case err == nil && st.Phase == phaseUp && (st.ControlPlane.APIServer == 0 || !fileExists(c.pki(pkiCA, ".crt"))):
		c.state = st
		why := "the control plane's files in " + c.controlPlaneDir() + " are gone"
		if st.ControlPlane.APIServer == 0 {
			why = "it was made by an older paddock, whose control plane kwokctl ran"
		}
		c.progress("local cluster %q: %s; starting over", c.name, why)
		if err := c.teardown(ctx); err != nil {
			return nil, err
		}
	case err == nil && st.Phase == phaseUp && c.nodes != NodesAuto && c.nodes != nodesOf(st):
		return nil, fmt.Errorf("local cluster %q runs %s nodes, not %s; run `paddock local down` first to change that", c.name, nodesOf(st), c.nodes)
	case err == nil && st.Phase == phaseUp && st.retiredNode():
		return nil, errRetiredNode(c.name)
	case err == nil && st.Phase == phaseUp:
		c.state = st
		resolve := resolveNodeTools
		if !st.real() {
			// kwok left the tools every cluster needs; a kwok-node cluster still
			// needs it to restart its controller.
			resolve = func(bins map[string]string) error { return resolveFakeNodeTool(bins, "") }
		}
		if err := resolve(bins); err != nil {
			return nil, err
		}
		return c.upExisting(ctx, bins)
	case err == nil:
		// An Up that never finished: start over.
		c.state = st
		c.progress("local cluster %q: an earlier start did not finish; cleaning up first", c.name)
		if err := c.teardown(ctx); err != nil {
			return nil, err
		}
	case errors.Is(err, errNoState):
		if running, home := sameNameNodeElsewhere(c.name); running && c.checksNodeElsewhere() {
			return nil, errNodeElsewhere(c.name, home)
		}
		if c.hasLeftovers() {
			c.progress("local cluster %q: removing leftovers of an earlier run in %s", c.name, c.dir)
			if err := c.teardown(ctx); err != nil {
				return nil, err
			}
		}
	default:
		return nil, err
	}
	nodes, err := c.chooseNodes(bins)
	if err != nil {
		return nil, err
	}
	return c.create(ctx, bins, nodes)
}

func nodesOf(st *clusterState) string {
	if st.real() {
		return NodesReal
	}
	return NodesFake
}

// chooseNodes decides the node kind of a new cluster (see Options.Nodes) and adds
// the real node's tools to bins when it is real.
func (c *cluster) chooseNodes(bins map[string]string) (string, error) {
	if c.nodes == NodesFake {
		return NodesFake, resolveFakeNodeTool(bins, "")
	}
	why := realNodeSupport(probeMachine(c.name, planNodeNet(c.name), paths.Tool))
	if why == "" {
		return NodesReal, resolveNodeTools(bins)
	}
	if c.nodes == NodesReal {
		return "", fmt.Errorf("this machine cannot run the local stack's real node: %s", why)
	}
	if err := resolveFakeNodeTool(bins, why); err != nil {
		return "", err
	}
	c.progress("a real node cannot run here (%s); using a kwok node, where no container runs (`--nodes fake` chooses it without this check, `--nodes real` makes it an error)", why)
	return NodesFake, nil
}

// resolveFakeNodeTool adds kwok, which only a cluster of kwok nodes runs, to bins.
// why, when set, is why a real node cannot run here.
func resolveFakeNodeTool(bins map[string]string, why string) error {
	p, err := paths.Tool(fakeNodeTool)
	if err != nil {
		if why != "" {
			return fmt.Errorf("a real node cannot run here (%s), and a kwok node needs the pinned kwok, which `make tools` leaves out: run `make tool-kwok`, then `paddock local up` again", why)
		}
		return fmt.Errorf("kwok nodes need the pinned kwok, which `make tools` leaves out: run `make tool-kwok` (%w)", err)
	}
	bins[fakeNodeTool] = p
	return nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// hasLeftovers reports whether Dir holds pieces of a cluster without a state file.
func (c *cluster) hasLeftovers() bool {
	for _, p := range []string{controlPlaneDir, legacyKwokDir, supervisorFile, supervisorPID, nodeDir} {
		if _, err := os.Stat(filepath.Join(c.dir, p)); err == nil {
			return true
		}
	}
	return false
}

func (c *cluster) create(ctx context.Context, bins map[string]string, nodes string) (*Info, error) {
	start := time.Now()
	c.progress("creating local cluster %q in %s", c.name, c.dir)
	if err := os.MkdirAll(c.logsDir(), 0o755); err != nil {
		return nil, err
	}
	ports, err := loopbackport.Free(2)
	if err != nil {
		return nil, fmt.Errorf("choose ports for the Agent Sandbox controller: %w", err)
	}
	cpPorts, err := choosePorts(c.dir, nodes == NodesFake)
	if err != nil {
		return nil, fmt.Errorf("choose the control plane's ports: %w", err)
	}
	c.state = &clusterState{
		Name:                  c.name,
		CreatedAt:             time.Now().UTC(),
		Phase:                 phaseCreating,
		Binaries:              bins,
		ControllerMetricsPort: ports[0],
		ControllerProbePort:   ports[1],
		Nodes:                 nodes,
		ControlPlane:          cpPorts,
	}
	if nodes == NodesReal {
		c.state.NodeNet = planNodeNet(c.name)
		agentPorts, err := loopbackport.Free(3)
		if err != nil {
			return nil, fmt.Errorf("choose ports for the Cilium agent: %w", err)
		}
		nn := &c.state.NodeNet
		nn.AgentMetricsPort, nn.AgentHealthPort, nn.HubbleMetricsPort = agentPorts[0], agentPorts[1], agentPorts[2]
	}
	if err := writeState(c.dir, c.state); err != nil {
		return nil, err
	}

	done := c.step("starting the control plane on loopback (%s)", componentNames(c.components()))
	err = c.prepareControlPlane()
	if err == nil {
		err = c.startControlPlane()
	}
	done(err)
	if err != nil {
		return nil, c.failUp(err)
	}
	if err := c.bringUp(ctx); err != nil {
		return nil, c.failUp(err)
	}
	c.state.Phase = phaseUp
	if err := writeState(c.dir, c.state); err != nil {
		return nil, c.failUp(err)
	}
	if err := c.applyObservability(ctx); err != nil {
		return nil, fmt.Errorf("%w\n  the cluster is up without them; `paddock local up --observability` tries again", err)
	}
	c.progress("local cluster %q is up (%s); kubeconfig %s, context %s",
		c.name, roundDuration(time.Since(start)), c.kubeconfig(), c.info().Context)
	return c.info(), nil
}

// bringUp waits for the API server, makes the nodes and starts the supervisor.
func (c *cluster) bringUp(ctx context.Context) error {
	cs, err := c.clientset(10 * time.Second)
	if err != nil {
		return err
	}
	done := c.step("waiting for the API server")
	err = c.waitAPI(ctx, cs)
	done(err)
	if err != nil {
		return err
	}
	return c.finishUp(ctx, cs)
}

// finishUp makes the nodes Ready and schedulable and starts the supervisor.
func (c *cluster) finishUp(ctx context.Context, cs kubernetes.Interface) error {
	agent := c.state.real()
	if agent {
		// The agent reads its CRDs as it starts, and its CiliumNode is seeded
		// before that (seedCiliumNode). Installing them beside the node's
		// start gained nothing on two cores: every step there is CPU-bound.
		done := c.step("installing Cilium %s's CRDs (the node's dataplane)", pins.Cilium)
		err := c.installCiliumCRDs(ctx)
		done(err)
		if err != nil {
			return err
		}
	}
	if c.state.real() {
		if err := c.startRealNode(ctx, cs); err != nil {
			return err
		}
	} else {
		for i := 0; i < nodeCount; i++ {
			if err := c.ensureNodeReady(ctx, cs, i); err != nil {
				return err
			}
		}
	}
	if !agent {
		done := c.step("installing Cilium %s policy CRDs (schema only: no Cilium agent runs here)", pins.Cilium)
		err := c.installCiliumCRDs(ctx)
		done(err)
		if err != nil {
			return err
		}
	}
	return c.ensureSupervisor(ctx)
}

// waitAPI polls /readyz until it answers ok. It fails early, naming the log, when
// etcd or the API server exits meanwhile.
func (c *cluster) waitAPI(ctx context.Context, cs kubernetes.Interface) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	last := ""
	for {
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		last = apiHealth(rctx, cs)
		rcancel()
		if last == "" {
			return nil
		}
		for _, comp := range c.components()[:2] { // etcd, kube-apiserver
			if ci := c.inspectComponent(comp); !ci.Owned {
				return fmt.Errorf("%s exited while starting (%s)%s\n  full log: %s",
					comp.Name, ci.Reason, indentTail(logTail(c.componentLog(comp.Name), 4096), 8), c.componentLog(comp.Name))
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the API server did not become ready within %s (last answer: %s)\n  full log: %s",
				c.timeout, last, c.componentLog("kube-apiserver"))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *cluster) ensureNodeReady(ctx context.Context, cs kubernetes.Interface, i int) error {
	name := nodeName(c.name, i)
	start := time.Now()
	if err := ensureNode(ctx, cs, c.name, i); err != nil {
		return fmt.Errorf("create node %s: %w", name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	for {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err == nil && nodeSchedulable(n) {
			c.progress("node %s ready %s", name, roundDuration(time.Since(start)))
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s did not become Ready and schedulable within %s; kwok marks it Ready (see %s), kube-controller-manager lifts its not-ready taint (see %s)",
				name, c.timeout, c.componentLog("kwok-controller"), c.componentLog("kube-controller-manager"))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// upExisting handles Up on a cluster whose state says it is up: nothing to do
// when everything runs; otherwise restart what stopped.
func (c *cluster) upExisting(ctx context.Context, bins map[string]string) (*Info, error) {
	start := time.Now()
	s, err := c.Status(ctx)
	if err != nil {
		return nil, err
	}
	// Keep the binaries the cluster was created with unless they are gone.
	for k, v := range bins {
		if _, err := os.Stat(c.state.Binaries[k]); err != nil {
			c.state.Binaries[k] = v
		}
	}
	controlPlaneOK := s.APIServer.Ready
	for _, cs := range s.Components {
		if cs.kind == kindControlPlane && cs.State != Running {
			controlPlaneOK = false
		}
	}
	if !controlPlaneOK {
		c.progress("local cluster %q is not healthy: %s", c.name, strings.Join(s.Problems(), "; "))
		if err := c.repairControlPlane(ctx); err != nil {
			return nil, fmt.Errorf("%w\n  fix the cause and run `paddock local up` again, or `paddock local down` to start over", err)
		}
		if err := writeState(c.dir, c.state); err != nil {
			return nil, err
		}
		c.progress("local cluster %q is up again (%s)", c.name, roundDuration(time.Since(start)))
		return c.info(), nil
	}
	cs, err := c.clientset(10 * time.Second)
	if err != nil {
		return nil, err
	}
	for i := 0; i < nodeCount && !c.state.real(); i++ {
		if err := ensureNode(ctx, cs, c.name, i); err != nil {
			return nil, fmt.Errorf("node %s: %w", nodeName(c.name, i), err)
		}
	}
	what := "already up"
	if sup := s.component("supervisor"); sup.State != Running && c.state.real() {
		// The machine may have lost the bridge or the cgroups (a reboot).
		if err := c.writeNodeFiles(); err != nil {
			return nil, err
		}
		if err := c.prepareHost(c.nodeDirs(), c.state.NodeNet); err != nil {
			return nil, err
		}
	}
	if sup := s.component("supervisor"); sup.State != Running {
		c.progress("supervisor %s (%s); starting a new one", sup.State, sup.Detail)
		what = "up again"
	}
	if err := c.ensureSupervisor(ctx); err != nil {
		return nil, err
	}
	if c.state.real() {
		// The resolver pod may have been deleted or moved to another address.
		if err := c.ensureClusterDNS(ctx, cs); err != nil {
			return nil, err
		}
	}
	if err := writeState(c.dir, c.state); err != nil {
		return nil, err
	}
	if err := c.applyObservability(ctx); err != nil {
		return nil, err
	}
	c.progress("local cluster %q is %s (checked in %s); kubeconfig %s, context %s",
		c.name, what, roundDuration(time.Since(start)), c.kubeconfig(), c.info().Context)
	return c.info(), nil
}

// repairSettle is how long a repaired control plane must keep running before Up
// trusts it.
var repairSettle = 5 * time.Second

// repairControlPlane restarts the control plane components that are not running
// and waits for the API server. kube-controller-manager and kube-scheduler exit
// on their own when the API server has been gone longer than their leader lease,
// possibly after the first look, so it looks again once the API server is back.
func (c *cluster) repairControlPlane(ctx context.Context) error {
	cs, err := c.clientset(10 * time.Second)
	if err != nil {
		return err
	}
	const rounds = 3
	for round := 1; ; round++ {
		c.forgetStalePIDs()
		done := c.step("restarting stopped control plane components")
		err := c.startControlPlane()
		done(err)
		if err != nil {
			return err
		}
		done = c.step("waiting for the API server")
		err = c.waitAPI(ctx, cs)
		done(err)
		if err != nil {
			return err
		}
		// Watch a few seconds: a component whose lease ran out while the API server
		// was down exits now rather than later.
		var stopped []string
		for settle := time.Now().Add(repairSettle); len(stopped) == 0 && time.Now().Before(settle); {
			for _, comp := range c.components() {
				if !c.inspectComponent(comp).Owned {
					stopped = append(stopped, comp.Name)
				}
			}
			if len(stopped) == 0 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(250 * time.Millisecond):
				}
			}
		}
		if len(stopped) == 0 {
			return c.finishUp(ctx, cs)
		}
		if round == rounds {
			return fmt.Errorf("%s keep stopping; see their logs in %s", strings.Join(stopped, ", "), c.logsDir())
		}
		c.progress("%s stopped meanwhile", strings.Join(stopped, ", "))
	}
}

// failUp stops what a failed Up started but keeps Dir, so the logs the error
// names still exist; the next Up or a Down cleans up.
func (c *cluster) failUp(err error) error {
	c.stopSupervisor()
	_ = c.stopComponents()
	return fmt.Errorf("%w\n  logs: %s\n  `paddock local down` removes what is left", err, c.logsDir())
}

// logTail returns up to max bytes from the end of a file, starting at a line.
func logTail(path string, max int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	off := fi.Size() - max
	if off < 0 {
		off = 0
	}
	b := make([]byte, fi.Size()-off)
	n, _ := f.ReadAt(b, off)
	s := string(b[:n])
	if off > 0 {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	return s
}
