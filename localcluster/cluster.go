// Package localcluster runs Paddock's embedded default target: a real Kubernetes
// control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler)
// started by kwokctl's binary runtime, with fake kwok nodes shaped like GKE Sandbox
// (gVisor) nodes, plus the real Agent Sandbox controller run outside the cluster
// by a small detached supervisor.
//
// Everything lives in one directory (Options.Dir, default PADDOCK_HOME/local):
//
//	state.json        what Up decided and started (names, tool paths, ports, supervisor pid)
//	supervisor.json   what the supervisor is doing (phase, controller pid, restarts)
//	supervisor.pid    the supervisor's pid, for people and scripts
//	kubeconfig        the cluster's kubeconfig (context kwok-NAME)
//	bin/kubectl       a shim kwokctl runs instead of kubectl (see writeKubectlShim)
//	logs/             kwokctl.log, supervisor.log, agent-sandbox-controller.log
//	kwok/             KWOK_WORKDIR: kwokctl's pki, pids, component logs
//
// Every pinned binary comes from `make tools` (internal/paths); nothing is ever
// downloaded. Processes are only ever signalled after checking that the pid still
// belongs to the process this package started.
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
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/paddock-platform/paddock/internal/paths"
	"github.com/paddock-platform/paddock/pins"
)

// DefaultName is the cluster name when Options.Name is empty.
const DefaultName = "paddock"

// Cluster is one local cluster, identified by its name and directory.
type Cluster interface {
	// Up starts the cluster and returns how to reach it. It is idempotent: on a
	// running cluster it returns the running cluster's Info, and it restarts the
	// pieces of a cluster that crashed.
	Up(ctx context.Context) (*Info, error)
	// Down stops exactly the processes Up started and removes the cluster's state.
	// Down when nothing runs is not an error.
	Down(ctx context.Context) error
	// Status reports every component and the API server's health.
	Status(ctx context.Context) (*Status, error)
}

// Info says how to reach a running cluster.
type Info struct {
	Name       string `json:"name"`
	Kubeconfig string `json:"kubeconfig"`
	Context    string `json:"context"`
	Dir        string `json:"dir"`
	LogsDir    string `json:"logsDir"`
}

// Options configure New. Zero values mean the defaults.
type Options struct {
	// Name of the cluster (default "paddock"): lowercase letters, digits and '-'.
	Name string
	// Dir is the cluster's own directory (default paths.LocalDir()). Down removes
	// what Up created in it, and the directory itself when that leaves it empty.
	Dir string
	// Out receives progress lines a person can follow; nil discards them.
	Out io.Writer
	// SupervisorCommand is the command line that runs Supervise; "--dir DIR" is
	// appended. The default is this executable with "local supervise" (the hidden
	// `paddock local supervise` command). Tests point it at their own binary.
	SupervisorCommand []string
	// Timeout bounds each wait of Up (API server, node readiness); default 2m.
	Timeout time.Duration
}

type cluster struct {
	name, dir     string
	out           io.Writer
	supervisorCmd []string
	timeout       time.Duration
	err           error // invalid options, reported by every method

	state *clusterState // loaded by each operation
}

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$`)

// New returns the cluster described by opts. It does not touch the machine.
func New(opts Options) Cluster {
	c := &cluster{name: opts.Name, dir: opts.Dir, out: opts.Out, timeout: opts.Timeout}
	if c.name == "" {
		c.name = DefaultName
	}
	if !nameRE.MatchString(c.name) {
		c.err = fmt.Errorf("invalid local cluster name %q: use 1-40 lowercase letters, digits and '-'", c.name)
	}
	if c.dir == "" {
		c.dir = paths.LocalDir()
	}
	if abs, err := filepath.Abs(c.dir); err == nil {
		c.dir = abs
	}
	if c.out == nil {
		c.out = io.Discard
	}
	if c.timeout <= 0 {
		c.timeout = 2 * time.Minute
	}
	c.supervisorCmd = opts.SupervisorCommand
	if len(c.supervisorCmd) == 0 {
		exe, err := os.Executable()
		if err != nil && c.err == nil {
			c.err = fmt.Errorf("cannot find the paddock executable to run the supervisor: %w", err)
		}
		c.supervisorCmd = []string{exe, "local", "supervise"}
	}
	return c
}

func (c *cluster) info() *Info {
	return &Info{
		Name:       c.name,
		Kubeconfig: c.kubeconfig(),
		Context:    "kwok-" + c.name,
		Dir:        c.dir,
		LogsDir:    c.logsDir(),
	}
}

func (c *cluster) kubeconfig() string { return filepath.Join(c.dir, kubeconfigFile) }
func (c *cluster) logsDir() string    { return filepath.Join(c.dir, logsDir) }

// progress prints one line.
func (c *cluster) progress(format string, args ...any) {
	fmt.Fprintf(c.out, format+"\n", args...)
}

// step prints "msg… " and returns a function that finishes the line with the
// elapsed time, or with "failed" when given an error.
func (c *cluster) step(format string, args ...any) func(error) {
	start := time.Now()
	fmt.Fprintf(c.out, format+"… ", args...)
	return func(err error) {
		if err != nil {
			fmt.Fprintln(c.out, "failed")
			return
		}
		fmt.Fprintln(c.out, roundDuration(time.Since(start)))
	}
}

func roundDuration(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}

// resolveTools finds every pinned binary, or returns the first *paths.ErrToolMissing.
func resolveTools() (map[string]string, error) {
	bins := map[string]string{}
	for _, t := range requiredTools {
		p, err := paths.Tool(t)
		if err != nil {
			return nil, err
		}
		bins[t] = p
	}
	return bins, nil
}

// lock takes an exclusive lock on Dir/.lock so two Up/Down never interleave.
// Down removes the lock file while holding it; a waiter that then gets the lock
// on the removed file notices (the path no longer names its file) and retries.
func (c *cluster) lock(ctx context.Context) (func(), error) {
	path := filepath.Join(c.dir, lockFile)
	told := false
	for {
		if err := os.MkdirAll(c.dir, 0o755); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return nil, err
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			held, herr := f.Stat()
			now, nerr := os.Stat(path)
			if herr == nil && nerr == nil && os.SameFile(held, now) {
				return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
			}
			f.Close() // removed under us: lock the new one
			continue
		}
		f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if !told {
			c.progress("waiting for another paddock local command on %s", c.dir)
			told = true
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *cluster) clientset(timeout time.Duration) (kubernetes.Interface, error) {
	cfg, err := restConfig(c.kubeconfig(), timeout)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// ---------------------------------------------------------------------------- Up

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
	case err == nil && st.Phase == phaseUp && !fileExists(filepath.Join(c.kwokClusterDir(), "kwok.yaml")):
		c.state = st
		c.progress("local cluster %q: kwokctl's files in %s are gone; starting over", c.name, c.kwokClusterDir())
		if err := c.teardown(ctx); err != nil {
			return nil, err
		}
	case err == nil && st.Phase == phaseUp:
		c.state = st
		return c.upExisting(ctx, bins)
	case err == nil:
		// An Up that never finished: start over.
		c.state = st
		c.progress("local cluster %q: an earlier start did not finish; cleaning up first", c.name)
		if err := c.teardown(ctx); err != nil {
			return nil, err
		}
	case errors.Is(err, errNoState):
		if c.hasLeftovers() {
			c.progress("local cluster %q: removing leftovers of an earlier run in %s", c.name, c.dir)
			if err := c.teardown(ctx); err != nil {
				return nil, err
			}
		}
	default:
		return nil, err
	}
	return c.create(ctx, bins)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// hasLeftovers reports whether Dir holds pieces of a cluster without a state file.
func (c *cluster) hasLeftovers() bool {
	for _, p := range []string{kwokDir, supervisorFile, supervisorPID} {
		if _, err := os.Stat(filepath.Join(c.dir, p)); err == nil {
			return true
		}
	}
	return false
}

func (c *cluster) create(ctx context.Context, bins map[string]string) (*Info, error) {
	start := time.Now()
	c.progress("creating local cluster %q in %s", c.name, c.dir)
	if err := os.MkdirAll(c.logsDir(), 0o755); err != nil {
		return nil, err
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, fmt.Errorf("choose ports for the Agent Sandbox controller: %w", err)
	}
	c.state = &clusterState{
		Name:                  c.name,
		CreatedAt:             time.Now().UTC(),
		Phase:                 phaseCreating,
		Binaries:              bins,
		ControllerMetricsPort: ports[0],
		ControllerProbePort:   ports[1],
	}
	if err := writeState(c.dir, c.state); err != nil {
		return nil, err
	}

	done := c.step("starting control plane (kwokctl)")
	err = c.kwokctl(ctx, kwokctlCreateArgs(c.name, c.kubeconfig(), bins)...)
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
	for i := 0; i < nodeCount; i++ {
		if err := c.ensureNodeReady(ctx, cs, i); err != nil {
			return err
		}
	}
	done := c.step("installing Cilium " + pins.Cilium + " policy CRDs (schema only: no Cilium agent runs here)")
	err := c.installCiliumCRDs(ctx)
	done(err)
	if err != nil {
		return err
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
		for _, comp := range kwokComponents[:2] { // etcd, kube-apiserver
			if ci := c.inspectComponent(comp.Name, comp.Tool); !ci.Owned {
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
	for i := 0; i < nodeCount; i++ {
		if err := ensureNode(ctx, cs, c.name, i); err != nil {
			return nil, fmt.Errorf("node %s: %w", nodeName(c.name, i), err)
		}
	}
	what := "already up"
	if sup := s.component("supervisor"); sup.State != Running {
		c.progress("supervisor %s (%s); starting a new one", sup.State, sup.Detail)
		what = "up again"
	}
	if err := c.ensureSupervisor(ctx); err != nil {
		return nil, err
	}
	if err := writeState(c.dir, c.state); err != nil {
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
		done := c.step("restarting stopped control plane components (kwokctl)")
		err := c.kwokctl(ctx, "--name", c.name, "start", "cluster")
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
			for _, comp := range kwokComponents {
				if !c.inspectComponent(comp.Name, comp.Tool).Owned {
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
			return fmt.Errorf("%s keep stopping; see their logs in %s", strings.Join(stopped, ", "), filepath.Join(c.kwokClusterDir(), "logs"))
		}
		c.progress("%s stopped meanwhile", strings.Join(stopped, ", "))
	}
}

// failUp stops what a failed Up started but keeps Dir, so the logs the error
// names still exist; the next Up or a Down cleans up.
func (c *cluster) failUp(err error) error {
	c.stopSupervisor()
	_ = c.stopComponents()
	return fmt.Errorf("%w\n  logs: %s and %s\n  `paddock local down` removes what is left", err, c.logsDir(), filepath.Join(c.kwokClusterDir(), "logs"))
}

// freePorts returns n distinct free TCP ports on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func portFree(p int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		return false
	}
	l.Close()
	return true
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

// ------------------------------------------------------------------- supervisor

// ensureSupervisor starts the supervisor unless the recorded one still runs.
func (c *cluster) ensureSupervisor(ctx context.Context) error {
	if c.state.Supervisor != nil {
		if ok, _ := c.state.Supervisor.alive(); ok {
			return nil
		}
	}
	// A controller left behind by a supervisor that died is stopped first.
	c.stopSupervisor()
	return c.startSupervisor(ctx)
}

func (c *cluster) startSupervisor(ctx context.Context) error {
	if err := os.MkdirAll(c.logsDir(), 0o755); err != nil {
		return err
	}
	_ = os.Remove(filepath.Join(c.dir, supervisorFile))
	logPath := filepath.Join(c.logsDir(), supervisorLog)
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	argv := append(append([]string{}, c.supervisorCmd...), "--dir", c.dir)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = c.dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	// Own session and process group: the supervisor outlives this command and
	// does not get the terminal's signals.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the supervisor (%s): %w", strings.Join(argv, " "), err)
	}
	// Reap it should it exit while this process still runs (tests, long-lived
	// callers); a CLI exits long before and init adopts it.
	go func() { _ = cmd.Wait() }()
	rec, err := recordProcess(cmd.Process.Pid)
	if err != nil {
		return fmt.Errorf("supervisor exited at once; see %s", logPath)
	}
	c.state.Supervisor = &rec
	if err := writeState(c.dir, c.state); err != nil {
		return err
	}
	_ = os.WriteFile(filepath.Join(c.dir, supervisorPID), []byte(strconv.Itoa(rec.PID)+"\n"), 0o644)

	// Wait for its first report, so a supervisor that cannot start is an error
	// here rather than a surprise later.
	deadline := time.Now().Add(15 * time.Second)
	for {
		if r, err := readReport(c.dir); err == nil && r.Self.PID == rec.PID {
			switch r.Phase {
			case phaseWaiting:
				c.progress("agent-sandbox-controller waits for the Agent Sandbox CRDs (`paddock up` installs them); supervisor pid %d", rec.PID)
			case phaseRunning:
				c.progress("agent-sandbox-controller started (pid %d); supervisor pid %d", r.Controller.PID, rec.PID)
			default:
				c.progress("agent-sandbox-controller supervisor started (pid %d): %s", rec.PID, r.Phase)
			}
			return nil
		}
		if ok, _ := rec.alive(); !ok {
			return fmt.Errorf("the supervisor exited at once%s\n  full log: %s", indentTail(logTail(logPath, 2048), 8), logPath)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the supervisor (pid %d) did not report within 15s; see %s", rec.PID, logPath)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stopSupervisor stops the supervisor (which stops the controller) and then any
// controller it left behind, each only after checking its identity.
func (c *cluster) stopSupervisor() {
	var recs []procRecord
	if c.state != nil && c.state.Supervisor != nil {
		recs = append(recs, *c.state.Supervisor)
	}
	rep, _ := readReport(c.dir)
	if rep != nil && rep.Self.PID != 0 && (len(recs) == 0 || recs[0] != rep.Self) {
		recs = append(recs, rep.Self)
	}
	for _, r := range recs {
		_, _ = terminate(r, 15*time.Second)
	}
	if rep, _ := readReport(c.dir); rep != nil && rep.Controller != nil {
		_, _ = terminate(*rep.Controller, 10*time.Second)
	}
}

// -------------------------------------------------------------------------- Down

func (c *cluster) Down(ctx context.Context) error {
	if c.err != nil {
		return c.err
	}
	if _, err := os.Stat(c.dir); errors.Is(err, os.ErrNotExist) {
		c.progress("no local cluster %q in %s; nothing to do", c.name, c.dir)
		return nil
	}
	unlock, err := c.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	st, err := readState(c.dir)
	switch {
	case err == nil:
		if st.Name != c.name {
			return fmt.Errorf("%s holds local cluster %q, not %q", c.dir, st.Name, c.name)
		}
		c.state = st
	case errors.Is(err, errNoState):
		if !c.hasLeftovers() {
			c.progress("no local cluster %q in %s; nothing to do", c.name, c.dir)
			c.removeOwned()
			return nil
		}
	default:
		return err
	}
	start := time.Now()
	if err := c.teardown(ctx); err != nil {
		return err
	}
	c.progress("local cluster %q removed (%s)", c.name, roundDuration(time.Since(start)))
	return nil
}

// teardown stops everything and removes the state. The caller holds the lock.
func (c *cluster) teardown(ctx context.Context) error {
	done := c.step("stopping the Agent Sandbox controller and its supervisor")
	c.stopSupervisor()
	done(nil)

	done = c.step("stopping the control plane")
	err := c.stopComponents()
	if err == nil {
		err = c.kwokctlDelete(ctx)
	}
	done(err)
	if err != nil {
		return err
	}
	c.removeOwned()
	return nil
}

// kwokctlDelete lets kwokctl remove its cluster (its pid files are gone by now, so
// it signals nothing), then makes sure its work dir is gone.
func (c *cluster) kwokctlDelete(ctx context.Context) error {
	if _, err := os.Stat(c.kwokClusterDir()); err != nil {
		return nil
	}
	if c.state == nil {
		c.state = &clusterState{Name: c.name}
	}
	if c.state.Binaries == nil {
		c.state.Binaries = map[string]string{}
	}
	if _, err := os.Stat(c.state.Binaries["kwokctl"]); err != nil {
		if p, err := paths.Tool("kwokctl"); err == nil {
			c.state.Binaries["kwokctl"] = p
		}
	}
	if c.state.Binaries["kwokctl"] != "" {
		_ = os.MkdirAll(c.logsDir(), 0o755)
		if err := c.kwokctl(ctx, "--name", c.name, "delete", "cluster", "--kubeconfig", c.kubeconfig()); err != nil {
			c.progress("(kwokctl delete failed; removing its files directly: %v)", firstLine(err.Error()))
		}
	}
	return os.RemoveAll(filepath.Join(c.dir, kwokDir))
}

// removeOwned deletes what Up creates in Dir, then Dir itself if that left it
// empty. Files Paddock did not create are left alone.
func (c *cluster) removeOwned() {
	for _, p := range []string{stateFile, supervisorFile, supervisorPID, kubeconfigFile, shimDir, logsDir, kwokDir, lockFile} {
		_ = os.RemoveAll(filepath.Join(c.dir, p))
	}
	_ = os.Remove(c.dir) // only succeeds when empty
}

// ------------------------------------------------------------------------ Status

// State is a component's condition.
type State string

const (
	Running    State = "running"
	Starting   State = "starting"         // alive, health probe not yet ok
	Waiting    State = "waiting-for-crds" // the controller waits for `paddock up`
	Unhealthy  State = "unhealthy"        // alive, health probe failing
	Crashed    State = "crashed"          // was started, process gone
	NotStarted State = "not started"
)

type componentKind int

const (
	kindControlPlane componentKind = iota
	kindSupervisor
	kindController
)

// ComponentStatus is one process of the local cluster.
type ComponentStatus struct {
	Name   string `json:"name"`
	State  State  `json:"state"`
	PID    int    `json:"pid,omitempty"`
	Detail string `json:"detail,omitempty"`
	Log    string `json:"log,omitempty"`

	kind componentKind
}

// APIServerStatus is the API server's answer to /readyz.
type APIServerStatus struct {
	URL    string `json:"url,omitempty"`
	Ready  bool   `json:"ready"`
	Detail string `json:"detail,omitempty"`
}

// NodeStatus is one of the cluster's fake nodes.
type NodeStatus struct {
	Name  string `json:"name"`
	Ready bool   `json:"ready"`
}

// Status is the whole local cluster.
type Status struct {
	Info
	// Exists is false when Dir holds no cluster; the rest is then empty.
	Exists bool `json:"exists"`
	// Complete is false while Up is creating the cluster, and after an Up that
	// failed before finishing (the next Up starts over).
	Complete   bool              `json:"complete"`
	CreatedAt  time.Time         `json:"createdAt,omitzero"`
	APIServer  APIServerStatus   `json:"apiServer"`
	Nodes      []NodeStatus      `json:"nodes,omitempty"`
	Components []ComponentStatus `json:"components"`
}

// Healthy reports whether the cluster exists, its API server is ready and no
// component is crashed, unhealthy or missing. A controller waiting for the Agent
// Sandbox CRDs is healthy: that is the normal state before `paddock up`.
func (s *Status) Healthy() bool {
	return s.Exists && len(s.Problems()) == 0
}

// Problems lists what keeps the cluster from being healthy, one phrase each.
func (s *Status) Problems() []string {
	if !s.Exists {
		return []string{"no local cluster " + strconv.Quote(s.Name) + " in " + s.Dir}
	}
	var p []string
	if !s.Complete {
		p = append(p, "creation not finished (an Up is running, or one failed and the next starts over)")
	}
	if !s.APIServer.Ready {
		p = append(p, "API server not ready ("+s.APIServer.Detail+")")
	}
	for _, c := range s.Components {
		switch c.State {
		case Running, Starting, Waiting:
		default:
			d := c.Name + " " + string(c.State)
			if c.Detail != "" {
				d += " (" + c.Detail + ")"
			}
			p = append(p, d)
		}
	}
	for _, n := range s.Nodes {
		if !n.Ready {
			p = append(p, "node "+n.Name+" not Ready")
		}
	}
	return p
}

// component returns the named component's status (zero value if absent).
func (s *Status) component(name string) ComponentStatus {
	for _, c := range s.Components {
		if c.Name == name {
			return c
		}
	}
	return ComponentStatus{}
}

func (c *cluster) Status(ctx context.Context) (*Status, error) {
	if c.err != nil {
		return nil, c.err
	}
	s := &Status{Info: *c.info()}
	st, err := readState(c.dir)
	if errors.Is(err, errNoState) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	c.state = st
	s.Exists, s.Complete = true, st.Phase == phaseUp
	s.CreatedAt = st.CreatedAt

	for _, comp := range kwokComponents {
		ci := c.inspectComponent(comp.Name, comp.Tool)
		cs := ComponentStatus{Name: comp.Name, PID: ci.PID, Log: c.componentLog(comp.Name), kind: kindControlPlane}
		switch {
		case ci.Owned:
			cs.State = Running
		case ci.PIDFile:
			cs.State, cs.Detail = Crashed, ci.Reason
		default:
			cs.State, cs.Detail = NotStarted, "no pid file"
		}
		s.Components = append(s.Components, cs)
	}

	// API server and nodes.
	if cs, err := c.clientset(3 * time.Second); err != nil {
		s.APIServer.Detail = err.Error()
	} else {
		if cfg, err := restConfig(c.kubeconfig(), 0); err == nil {
			s.APIServer.URL = cfg.Host
		}
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		if why := apiHealth(rctx, cs); why == "" {
			s.APIServer.Ready = true
			nodes, err := cs.CoreV1().Nodes().List(rctx, metav1.ListOptions{LabelSelector: "paddock.dev/local-cluster=" + c.name})
			if err == nil {
				for i := range nodes.Items {
					s.Nodes = append(s.Nodes, NodeStatus{Name: nodes.Items[i].Name, Ready: nodeReady(&nodes.Items[i])})
				}
			}
			if len(s.Nodes) == 0 {
				s.Nodes = append(s.Nodes, NodeStatus{Name: nodeName(c.name, 0)})
			}
		} else {
			s.APIServer.Detail = why
		}
		cancel()
	}

	sup, ctl := c.supervisorStatus(ctx, st)
	s.Components = append(s.Components, sup, ctl)
	return s, nil
}

// supervisorStatus reports the supervisor and the controller it runs.
func (c *cluster) supervisorStatus(ctx context.Context, st *clusterState) (ComponentStatus, ComponentStatus) {
	sup := ComponentStatus{Name: "supervisor", Log: filepath.Join(c.logsDir(), supervisorLog), kind: kindSupervisor}
	ctl := ComponentStatus{Name: "agent-sandbox-controller", Log: filepath.Join(c.logsDir(), controllerLog), kind: kindController}
	supAlive := false
	if st.Supervisor == nil {
		sup.State, sup.Detail = NotStarted, "no supervisor recorded"
	} else {
		sup.PID = st.Supervisor.PID
		var why string
		if supAlive, why = st.Supervisor.alive(); supAlive {
			sup.State = Running
		} else {
			sup.State, sup.Detail = Crashed, why+"; `paddock local up` restarts it"
		}
	}
	rep, err := readReport(c.dir)
	if err != nil || (st.Supervisor != nil && rep.Self.PID != st.Supervisor.PID) {
		rep = nil
	}
	ctlAlive := false
	if rep != nil && rep.Controller != nil {
		ctl.PID = rep.Controller.PID
		ctlAlive, _ = rep.Controller.alive()
	}
	switch {
	case !supAlive && ctlAlive:
		ctl.State, ctl.Detail = Running, "orphaned: its supervisor is gone"
	case !supAlive:
		ctl.State, ctl.Detail = NotStarted, "its supervisor is not running"
		if ctl.PID != 0 {
			ctl.State = Crashed
		}
	case rep == nil:
		ctl.State, ctl.Detail = NotStarted, "supervisor starting"
	case rep.Phase == phaseWaiting:
		ctl.State, ctl.PID = Waiting, 0
		if len(rep.MissingCRDs) == len(AgentSandboxCRDs) {
			ctl.Detail = "waits for the Agent Sandbox CRDs (`paddock up` installs them)"
		} else {
			ctl.Detail = "waits for CRDs " + strings.Join(rep.MissingCRDs, ", ")
		}
		if rep.Message != "" {
			ctl.Detail += " (" + rep.Message + ")"
		}
	case rep.Phase == phaseRunning && ctlAlive:
		ctl.State, ctl.Detail = c.probeController(ctx, rep)
	case rep.Phase == phaseBackoff || (rep.Phase == phaseRunning && !ctlAlive):
		ctl.State = Crashed
		ctl.Detail = "exited"
		if rep.LastExit != "" {
			ctl.Detail += " (" + rep.LastExit + ")"
		}
		if !rep.NextStartAt.IsZero() {
			ctl.Detail += fmt.Sprintf("; supervisor restarts it in %s", roundDuration(max(0, time.Until(rep.NextStartAt))))
		} else {
			ctl.Detail += "; supervisor restarts it"
		}
	default:
		ctl.State, ctl.Detail = NotStarted, "supervisor "+rep.Phase
	}
	if rep != nil && rep.Starts > 1 && ctl.State != Waiting {
		ctl.Detail = strings.TrimPrefix(ctl.Detail+fmt.Sprintf("; restarted %d×", rep.Starts-1), "; ")
	}
	return sup, ctl
}

// probeController asks the controller's health probe.
func (c *cluster) probeController(ctx context.Context, rep *supervisorReport) (State, string) {
	base := fmt.Sprintf("http://127.0.0.1:%d", rep.ProbePort)
	for _, path := range []string{"/healthz", "/readyz"} {
		if err := httpOK(ctx, base+path); err != nil {
			if time.Since(rep.Since) < 30*time.Second {
				return Starting, path + ": " + err.Error()
			}
			return Unhealthy, path + ": " + err.Error()
		}
	}
	return Running, fmt.Sprintf("healthy (%s/readyz)", base)
}
