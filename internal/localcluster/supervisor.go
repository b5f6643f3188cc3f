package localcluster

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/paddock-platform/paddock/internal/loopbackport"
	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/paths"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// Supervisor timing. Variables so the unit tests can shorten them.
var (
	crdPollInterval   = 2 * time.Second
	watchInterval     = 3 * time.Second
	backoffMin        = time.Second
	backoffMax        = 30 * time.Second
	stableRun         = time.Minute // a run this long resets the backoff
	controllerStopTTL = 10 * time.Second
)

var (
	errClusterGone = errors.New("the local cluster is gone")
	errCRDsGone    = errors.New("the Agent Sandbox CRDs are gone")
	errArgsChanged = errors.New("the installed controller Deployment changed (its release version or refill flags)")
)

// Supervise runs the Agent Sandbox controller for the local cluster in dir. It
// waits until the Agent Sandbox CRDs are Established, starts the controller
// against the cluster, restarts it with backoff when it exits, stops it while the
// CRDs are gone (`paddock destroy`) and starts it again when they are back. It
// returns when ctx is done, on SIGTERM or SIGINT, or when the cluster is gone (its
// state file or control plane directory removed, or another supervisor recorded in its
// place), always stopping the controller first.
//
// Up runs it in a detached process through the hidden `paddock local supervise`
// command; it logs to stderr, which Up points at logs/supervisor.log.
func Supervise(ctx context.Context, dir string) error {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	st, err := readState(dir)
	if err != nil {
		return fmt.Errorf("supervise %s: %w", dir, err)
	}
	if st.retiredNode() {
		return fmt.Errorf("supervise %s: %w", dir, errRetiredNode(st.Name))
	}
	self, err := recordProcess(os.Getpid())
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	signal.Ignore(syscall.SIGHUP)

	s := &supervisor{
		c:   &cluster{name: st.Name, dir: dir, state: st},
		log: log.New(os.Stderr, "", log.LstdFlags),
		rep: supervisorReport{Self: self, MetricsPort: st.ControllerMetricsPort, ProbePort: st.ControllerProbePort},
	}
	s.log.Printf("supervisor %d for local cluster %q in %s", self.PID, st.Name, dir)
	var nodeDone chan struct{}
	nodeCtx, stopNode := context.WithCancel(ctx)
	if st.real() {
		nodeDone = make(chan struct{})
		n := &nodeRunner{c: s.c, log: s.log}
		go func() { defer close(nodeDone); n.run(nodeCtx) }()
	}
	// kube-state-metrics and Prometheus, while the state asks for them.
	obsDone := make(chan struct{})
	obs := &obsRunner{c: &cluster{name: st.Name, dir: dir, state: st}, log: s.log}
	go func() { defer close(obsDone); obs.run(nodeCtx) }()
	err = s.run(ctx)
	stopNode()
	<-obsDone
	if nodeDone != nil {
		<-nodeDone
	}
	s.rep.Phase, s.rep.Since, s.rep.NextStartAt = phaseStopped, time.Now(), time.Time{}
	switch {
	case errors.Is(err, errClusterGone):
		s.rep.Message = err.Error()
		s.log.Printf("exiting: %v", err)
		err = nil
	case ctx.Err() != nil:
		s.log.Printf("exiting: %v", context.Cause(ctx))
		err = nil
	default:
		s.rep.Message = err.Error()
		s.log.Printf("exiting: %v", err)
	}
	s.write()
	return err
}

type supervisor struct {
	c   *cluster
	log *log.Logger
	rep supervisorReport
}

func (s *supervisor) write() {
	if err := writeJSON(filepath.Join(s.c.dir, supervisorFile), &s.rep); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.log.Printf("write %s: %v", supervisorFile, err)
	}
}

func (s *supervisor) setPhase(phase string) {
	s.rep.Phase, s.rep.Since = phase, time.Now().UTC()
	s.write()
}

// gone reports whether this supervisor should exit: its cluster was removed, or
// another live supervisor is recorded in the state file (a newer Up replaced it).
func (s *supervisor) gone() error {
	st, err := readState(s.c.dir)
	if err != nil {
		return fmt.Errorf("%w (%s: %v)", errClusterGone, stateFile, err)
	}
	if _, err := os.Stat(s.c.controlPlaneDir()); err != nil {
		return fmt.Errorf("%w (%v)", errClusterGone, err)
	}
	if st.Supervisor != nil && st.Supervisor.PID != s.rep.Self.PID {
		if ok, _ := st.Supervisor.alive(); ok {
			return fmt.Errorf("%w: supervisor %d replaced this one", errClusterGone, st.Supervisor.PID)
		}
	}
	s.c.state = st
	return nil
}

func (s *supervisor) run(ctx context.Context) error {
	cfg, err := restConfig(s.c.kubeconfig(), 10*time.Second)
	if err != nil {
		return err
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	backoff := backoffMin
	for {
		if err := s.waitCRDs(ctx, dc); err != nil {
			return err
		}
		started := time.Now()
		err := s.runController(ctx, dc)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, errClusterGone):
			return err
		case errors.Is(err, errCRDsGone), errors.Is(err, errArgsChanged):
			backoff = backoffMin
			continue
		}
		// The controller exited on its own.
		if time.Since(started) >= stableRun {
			backoff = backoffMin
		}
		s.rep.LastExit, s.rep.LastExitAt = describeExit(err), time.Now().UTC()
		s.rep.NextStartAt = time.Now().Add(backoff).UTC()
		s.setPhase(phaseBackoff)
		s.log.Printf("agent-sandbox-controller exited (%s); restarting in %s", s.rep.LastExit, backoff)
		if err := s.sleep(ctx, backoff); err != nil {
			return err
		}
		s.rep.NextStartAt = time.Time{}
		backoff = min(2*backoff, backoffMax)
	}
}

// sleep waits d, returning early when ctx is done or the cluster goes away.
func (s *supervisor) sleep(ctx context.Context, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(left, crdPollInterval)):
		}
		if err := s.gone(); err != nil {
			return err
		}
	}
}

func describeExit(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// waitCRDs returns once every Agent Sandbox CRD is Established.
func (s *supervisor) waitCRDs(ctx context.Context, dc dynamic.Interface) error {
	first := true
	lastMsg := ""
	for {
		if err := s.gone(); err != nil {
			return err
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		missing, err := missingCRDs(rctx, dc)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		msg := ""
		if err != nil {
			msg = "API server: " + firstLine(err.Error())
			missing = s.rep.MissingCRDs
			if missing == nil {
				missing = agentsandbox.CRDs
			}
		} else if len(missing) == 0 {
			s.rep.MissingCRDs, s.rep.Message = nil, ""
			s.log.Printf("Agent Sandbox CRDs are Established")
			return nil
		}
		if first || msg != lastMsg || strings.Join(missing, ",") != strings.Join(s.rep.MissingCRDs, ",") {
			s.rep.MissingCRDs, s.rep.Message = missing, msg
			s.rep.Controller = nil
			if first || s.rep.Phase != phaseWaiting {
				s.setPhase(phaseWaiting)
			} else {
				s.write()
			}
			if msg != "" {
				s.log.Printf("waiting for the Agent Sandbox CRDs: %s", msg)
			} else {
				s.log.Printf("waiting for the Agent Sandbox CRDs: %s", strings.Join(missing, ", "))
			}
			first, lastMsg = false, msg
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(crdPollInterval):
		}
	}
}

// controllerArgs is the controller's command line: out of cluster, against the
// local kubeconfig, extensions on, no leader election, no webhook (v1beta1 only,
// so no conversion call is ever made), both endpoints on loopback.
func controllerArgs(kubeconfig string, metricsPort, probePort int) []string {
	return []string{
		"--kubeconfig", kubeconfig,
		"--extensions",
		"--leader-elect=false",
		"--enable-webhook=false",
		"--manage-webhook-certs=false",
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", metricsPort),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", probePort),
	}
}

// runController starts the controller and returns when it exits (its Wait
// error), when the CRDs are gone (errCRDsGone), when the cluster is gone
// (errClusterGone) or when ctx is done; in the last three cases it stops the
// controller first.
func (s *supervisor) runController(ctx context.Context, dc dynamic.Interface) error {
	if s.c.state.Binaries[agentsandbox.ControllerBinary("")] == "" {
		return fmt.Errorf("%w: no agent-sandbox-controller binary recorded", errClusterGone)
	}
	want, _ := installedController(ctx, dc)
	bin, err := s.controllerBinary(want.Version)
	if err != nil {
		return err // the backoff retries, and the log says what to build
	}
	// Ports chosen at Up may have been taken since; pick others then.
	if !loopbackport.IsFree(s.rep.MetricsPort) || !loopbackport.IsFree(s.rep.ProbePort) || s.rep.MetricsPort == s.rep.ProbePort {
		ports, err := loopbackport.Free(2)
		if err != nil {
			return err
		}
		s.log.Printf("ports %d/%d are taken; using %d/%d", s.rep.MetricsPort, s.rep.ProbePort, ports[0], ports[1])
		s.rep.MetricsPort, s.rep.ProbePort = ports[0], ports[1]
	}
	logPath := filepath.Join(s.c.logsDir(), controllerLog)
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	args := append(controllerArgs(s.c.kubeconfig(), s.rep.MetricsPort, s.rep.ProbePort), want.Refill...)
	fmt.Fprintf(logf, "\n=== %s paddock supervisor %d: start %d: %s %s\n",
		time.Now().Format(time.RFC3339), s.rep.Self.PID, s.rep.Starts+1, bin, strings.Join(args, " "))

	cmd := exec.Command(bin, args...)
	cmd.Dir = s.c.dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	// Should the supervisor die without stopping it (SIGKILL), the kernel sends
	// the controller SIGTERM.
	release, err := startTiedToThread(cmd)
	if err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	defer release()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	rec, err := recordProcess(cmd.Process.Pid)
	if err != nil {
		rec = procRecord{PID: cmd.Process.Pid} // exited at once; Wait reports why
	}
	s.rep.Controller, s.rep.Release = &rec, want.Version
	s.rep.Starts++
	s.setPhase(phaseRunning)
	s.log.Printf("agent-sandbox-controller started (pid %d, %s, release %s, probe 127.0.0.1:%d)", rec.PID, filepath.Base(bin), want.versionOrPinned(), s.rep.ProbePort)

	stop := func(why error) error {
		s.rep.Phase = phaseStopping
		s.write()
		s.log.Printf("stopping agent-sandbox-controller (pid %d): %v", rec.PID, why)
		// The controller is this process's unreaped child, so its pid cannot have
		// been reused: signalling it directly is safe.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(controllerStopTTL):
			_ = cmd.Process.Kill()
			<-exited
		}
		s.rep.Controller = nil
		return why
	}

	tick := time.NewTicker(watchInterval)
	defer tick.Stop()
	misses := 0
	for {
		select {
		case err := <-exited:
			return exitError(err)
		case <-ctx.Done():
			return stop(ctx.Err())
		case <-tick.C:
			if err := s.gone(); err != nil {
				return stop(err)
			}
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			missing, err := missingCRDs(rctx, dc)
			cancel()
			if err == nil && len(missing) > 0 {
				misses++
			} else {
				misses = 0
			}
			// Two polls in a row, so a CRD being replaced is not mistaken for gone.
			if misses >= 2 {
				return stop(fmt.Errorf("%w (%s)", errCRDsGone, strings.Join(missing, ", ")))
			}
			if now, ok := installedController(ctx, dc); ok && !now.equal(want) {
				return stop(fmt.Errorf("%w: %s -> %s", errArgsChanged, want, now))
			} else if ok && now.Version != s.rep.Release {
				// The same build, now labelled (the first up): say which release it serves.
				s.rep.Release = now.Version
				s.write()
			}
		}
	}
}

var deploymentGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// refillFlags are the only controller flags the supervisor takes from the
// installed Deployment: the spec's refill shaping (manifests.RefillArgs). Any
// other flag someone adds to the Deployment stays there, unrun.
var refillFlags = []string{"--sandbox-warm-pool-replenish-delay=", "--sandbox-warm-pool-max-refill-rate="}

// installedSpec is what the supervisor takes from the installed controller
// Deployment: which release it belongs to (agentsandbox.VersionLabel; "" for
// a release installed before the label, or none: the pinned one) and the
// spec's refill shaping.
type installedSpec struct {
	Version string
	Refill  []string
}

// equal reports whether the same controller build runs with the same flags: a
// Deployment without the label and one labelled with the pinned release are
// the same (the first up installs the label), so that restarts nothing.
func (c installedSpec) equal(o installedSpec) bool {
	return agentsandbox.ControllerBinary(c.Version) == agentsandbox.ControllerBinary(o.Version) && slices.Equal(c.Refill, o.Refill)
}

func (c installedSpec) versionOrPinned() string {
	if c.Version == "" {
		return "pinned"
	}
	return c.Version
}

func (c installedSpec) String() string {
	return fmt.Sprintf("release %s [%s]", c.versionOrPinned(), strings.Join(c.Refill, " "))
}

// installedController reads the release's controller Deployment, which `paddock
// up` installs with zero replicas here: its release version picks the controller
// build, and the spec's refill shaping reaches the controller this supervisor
// runs. Nothing when there is no such Deployment (the pinned build with its
// defaults); ok is false when it could not be read (the API server
// restarting): nothing is known, so nothing changes.
func installedController(ctx context.Context, dc dynamic.Interface) (spec installedSpec, ok bool) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	dep, err := dc.Resource(deploymentGVR).Namespace(agentsandbox.Namespace).Get(rctx, agentsandbox.ControllerDeployment, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return installedSpec{}, true
	}
	if err != nil {
		return installedSpec{}, false
	}
	return installedSpec{Version: dep.GetLabels()[agentsandbox.VersionLabel], Refill: refillArgsOf(dep)}, true
}

// controllerBinary is the controller build of the installed release version:
// the one `local up` recorded for the pinned release, else the versioned build
// in PADDOCK_HOME/bin (tools/agent-sandbox-previous, `make tools-test`).
func (s *supervisor) controllerBinary(version string) (string, error) {
	name := agentsandbox.ControllerBinary(version)
	if bin := s.c.state.Binaries[name]; bin != "" {
		return bin, nil
	}
	bin, err := paths.Tool(name)
	if err != nil {
		return "", fmt.Errorf("the installed Agent Sandbox release is %s, and its controller build %s is not in %s: build it (`make tools-test` builds the previous release's) or install a release this stack has a controller for", version, name, paths.Bin())
	}
	return bin, nil
}

// refillArgsOf picks the refill flags out of a Deployment's containers' args.
func refillArgsOf(dep *unstructured.Unstructured) []string {
	var out []string
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	for _, c := range containers {
		cm, _ := c.(map[string]any)
		args, _ := cm["args"].([]any)
		for _, a := range args {
			s, _ := a.(string)
			for _, f := range refillFlags {
				if strings.HasPrefix(s, f) {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// exitError makes a clean exit an error too: the controller is not meant to stop.
func exitError(err error) error {
	if err == nil {
		return errors.New("exit status 0")
	}
	return err
}

// httpOK GETs url with a short timeout and expects 200.
func httpOK(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) {
			return errors.New(firstLine(ue.Unwrap().Error()))
		}
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}

// Starting and stopping the detached supervisor process (Up and Down use these).

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
	c.stopObservability()
}
