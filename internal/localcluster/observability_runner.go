package localcluster

// The supervisor's side of observability (observability.go): the runner that
// keeps kube-state-metrics and Prometheus running while the state asks for
// them, and Prometheus' configuration and rule files current.

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/paddock-platform/paddock/internal/manifests/promoperator"
)

// obsRunner is the supervisor's observability part: it follows the state's
// Observability, runs the two processes while it is set, keeps Prometheus'
// configuration and rule files current, and stops them when it is unset or
// the supervisor exits.
type obsRunner struct {
	c   *cluster
	log *log.Logger

	mu  sync.Mutex
	rep obsReport
}

var obsPollInterval = 2 * time.Second

func (o *obsRunner) write() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := writeJSON(filepath.Join(o.c.dir, obsReportFile), &o.rep); err != nil && !errors.Is(err, os.ErrNotExist) {
		o.log.Printf("write %s: %v", obsReportFile, err)
	}
}

func (o *obsRunner) run(ctx context.Context) {
	o.rep = obsReport{Supervisor: os.Getpid(), Procs: map[string]*nodeProcRep{}}
	for _, name := range obsProcessNames {
		o.rep.Procs[name] = &nodeProcRep{Log: filepath.Join(o.c.logsDir(), name+".log")}
	}
	var stop context.CancelFunc
	var done chan struct{}
	halt := func() {
		if stop != nil {
			stop()
			<-done
			stop, done = nil, nil
			o.log.Printf("observability: kube-state-metrics and Prometheus stopped")
		}
	}
	defer func() { halt(); o.write() }()
	var running *obsPorts
	for {
		st, err := readState(o.c.dir)
		var want *obsPorts
		if err == nil {
			want = st.Observability
		}
		if running != nil && (want == nil || *want != *running) {
			halt()
			running = nil
		}
		if want != nil && running == nil {
			pctx, cancel := context.WithCancel(context.Background())
			stop, done, running = cancel, make(chan struct{}), want
			go func(st *clusterState) { defer close(done); o.runProcs(pctx, st) }(st)
		}
		if running == nil {
			o.write()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(obsPollInterval):
		}
	}
}

// runProcs runs kube-state-metrics and Prometheus until stop is done, and
// keeps Prometheus' configuration and rule files current meanwhile.
func (o *obsRunner) runProcs(stop context.Context, st *clusterState) {
	dir := o.c.obsDir()
	rulesDir := filepath.Join(dir, "rules")
	if err := os.MkdirAll(rulesDir, 0o755); err != nil {
		o.log.Printf("observability: %v", err)
		return
	}
	targets := o.targets(st)
	if err := o.writeConfig(targets); err != nil {
		o.log.Printf("observability: %v", err)
		return
	}
	p := *st.Observability
	var wg sync.WaitGroup
	var promMu sync.Mutex
	var promPID int
	specs := []nodeProcSpec{
		{Name: ksmTool, Bin: st.Binaries[ksmTool], Args: ksmArgs(o.c.kubeconfig(), p)},
		{Name: prometheusTool, Bin: st.Binaries[prometheusTool], Args: prometheusArgs(dir, p)},
	}
	for _, s := range specs {
		if s.Bin == "" {
			o.log.Printf("observability: no %s binary recorded; run `paddock local up --observability` again", s.Name)
			return
		}
	}
	for _, s := range specs {
		wg.Add(1)
		go func(s nodeProcSpec) {
			defer wg.Done()
			o.keep(stop, s, func(pid int) {
				if s.Name == prometheusTool {
					promMu.Lock()
					promPID = pid
					promMu.Unlock()
				}
			})
		}(s)
	}
	o.log.Printf("observability: kube-state-metrics on 127.0.0.1:%d, Prometheus on 127.0.0.1:%d", p.KubeStateMetrics, p.Prometheus)
	reload := func(why string) {
		promMu.Lock()
		pid := promPID
		promMu.Unlock()
		if pid == 0 {
			return // it reads everything when it starts
		}
		o.log.Printf("observability: reloading Prometheus (%s)", why)
		// Prometheus is this process's child, so the pid is its own.
		_ = syscall.Kill(pid, syscall.SIGHUP)
		o.checkReload(stop, p.Prometheus)
	}
	dc := o.dynamicClient()
	for {
		if changed := o.syncRules(stop, dc, rulesDir); changed != "" {
			reload(changed)
		}
		if now := o.targets(st); now != targets {
			targets = now
			if err := o.writeConfig(targets); err != nil {
				o.log.Printf("observability: %v", err)
			} else {
				reload("scrape targets moved")
			}
		}
		select {
		case <-stop.Done():
			wg.Wait()
			return
		case <-time.After(obsPollInterval):
		}
	}
}

func (o *obsRunner) dynamicClient() dynamic.Interface {
	cfg, err := restConfig(o.c.kubeconfig(), 10*time.Second)
	if err != nil {
		o.log.Printf("observability: rules not synced: %v", err)
		return nil
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		o.log.Printf("observability: rules not synced: %v", err)
		return nil
	}
	return dc
}

// targets reads the current ports: the supervisor moves the controller's
// when it was taken.
func (o *obsRunner) targets(st *clusterState) ObsTargets {
	t := ObsTargets{Controller: st.ControllerMetricsPort, KubeStateMetrics: st.Observability.KubeStateMetrics}
	if rep, err := readReport(o.c.dir); err == nil && rep.MetricsPort != 0 {
		t.Controller = rep.MetricsPort
	}
	if st.real() {
		t.CiliumAgent, t.Hubble = st.NodeNet.AgentMetricsPort, st.NodeNet.HubbleMetricsPort
	}
	return t
}

func (o *obsRunner) writeConfig(t ObsTargets) error {
	b, err := PrometheusConfig(filepath.Join(o.c.obsDir(), "rules"), t)
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(o.c.obsDir(), "prometheus.yml"), b, 0o644)
}

// syncRules writes one rule file per PrometheusRule on the cluster and
// removes the files of objects that are gone. It returns what changed ("" for
// nothing).
func (o *obsRunner) syncRules(ctx context.Context, dc dynamic.Interface, rulesDir string) string {
	if dc == nil {
		return ""
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	list, err := dc.Resource(promoperator.PrometheusRules).List(rctx, metav1.ListOptions{})
	cancel()
	if err != nil {
		return "" // the API server restarting, or the CRD gone: keep what is loaded
	}
	want := map[string][]byte{}
	var names []string
	for i := range list.Items {
		u := &list.Items[i]
		b, err := RuleFile(u)
		if err != nil {
			o.log.Printf("observability: %v", err)
			continue
		}
		want[ruleFileName(u.GetNamespace(), u.GetName())] = b
		names = append(names, u.GetNamespace()+"/"+u.GetName())
	}
	sort.Strings(names)
	var changes []string
	for f, b := range want {
		old, err := os.ReadFile(filepath.Join(rulesDir, f))
		if err == nil && string(old) == string(b) {
			continue
		}
		if err := writeFileAtomic(filepath.Join(rulesDir, f), b, 0o644); err != nil {
			o.log.Printf("observability: %v", err)
			continue
		}
		changes = append(changes, "wrote "+f)
	}
	entries, _ := os.ReadDir(rulesDir)
	for _, e := range entries {
		if _, ok := want[e.Name()]; !ok && strings.HasSuffix(e.Name(), ".yaml") {
			_ = os.Remove(filepath.Join(rulesDir, e.Name()))
			changes = append(changes, "removed "+e.Name())
		}
	}
	o.mu.Lock()
	o.rep.Rules = names
	o.mu.Unlock()
	if len(changes) > 0 {
		o.write()
	}
	sort.Strings(changes)
	return strings.Join(changes, ", ")
}

// checkReload asks Prometheus whether its last reload worked, and records why not.
func (o *obsRunner) checkReload(ctx context.Context, port int) {
	var info struct {
		Data struct {
			ReloadConfigSuccess bool      `json:"reloadConfigSuccess"`
			LastConfigTime      time.Time `json:"lastConfigTime"`
		} `json:"data"`
	}
	sent := time.Now().Add(-time.Second)
	for i := 0; i < 20; i++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
		if err := getJSON(ctx, fmt.Sprintf("http://127.0.0.1:%d/api/v1/status/runtimeinfo", port), &info); err != nil {
			continue
		}
		if info.Data.ReloadConfigSuccess && info.Data.LastConfigTime.Before(sent) {
			continue // not reloaded yet
		}
		msg := ""
		if !info.Data.ReloadConfigSuccess {
			msg = "Prometheus refused the configuration or a rule file; see " + filepath.Join(o.c.logsDir(), prometheusTool+".log")
			o.log.Printf("observability: %s", msg)
		}
		o.mu.Lock()
		o.rep.RulesError = msg
		o.mu.Unlock()
		o.write()
		return
	}
}

// keep runs one process until stop is done, restarting it with backoff;
// started is told each new pid.
func (o *obsRunner) keep(stop context.Context, s nodeProcSpec, started func(pid int)) {
	restartWithBackoff(stop, func(err error, backoff time.Duration) {
		o.log.Printf("observability: %s exited (%s); restarting in %s", s.Name, describeExit(err), backoff)
	}, func() error { return o.runOnce(stop, s, started) })
}

func (o *obsRunner) runOnce(stop context.Context, s nodeProcSpec, started func(pid int)) error {
	o.mu.Lock()
	rep := o.rep.Procs[s.Name]
	o.mu.Unlock()
	logf, err := os.OpenFile(rep.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "\n=== %s paddock supervisor %d: start %d: %s %s\n",
		time.Now().Format(time.RFC3339), os.Getpid(), rep.Starts+1, s.Bin, strings.Join(s.Args, " "))
	cmd := exec.Command(s.Bin, s.Args...)
	cmd.Dir = o.c.obsDir()
	cmd.Stdout, cmd.Stderr = logf, logf
	// Should the supervisor die without stopping it, the kernel sends it SIGTERM.
	release, err := startTiedToThread(cmd)
	if err != nil {
		return err
	}
	defer release()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	rec, rerr := recordProcess(cmd.Process.Pid)
	if rerr != nil {
		rec = procRecord{PID: cmd.Process.Pid}
	}
	o.mu.Lock()
	rep.Proc, rep.Starts = &rec, rep.Starts+1
	o.mu.Unlock()
	o.write()
	started(rec.PID)
	o.log.Printf("observability: %s started (pid %d)", s.Name, rec.PID)

	var werr error
	select {
	case werr = <-exited:
		werr = exitError(werr)
	case <-stop.Done():
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case werr = <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			werr = <-exited
		}
		werr = nil
	}
	started(0)
	o.mu.Lock()
	rep.Proc = nil
	if werr != nil {
		rep.LastExit = werr.Error()
	}
	o.mu.Unlock()
	o.write()
	return werr
}
