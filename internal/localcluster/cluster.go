// Package localcluster runs Paddock's embedded default target: a real Kubernetes
// control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler)
// that Up starts itself, on loopback (controlplane.go), with one node shaped like
// a GKE Sandbox (gVisor) node: a real one (kubelet, containerd, runsc; node.go)
// where the machine allows it, else a kwok node, plus the real Agent Sandbox
// controller run outside the cluster by a small detached supervisor.
//
// Everything lives in one directory (Options.Dir, default PADDOCK_HOME/local):
//
//	state.json        what Up decided and started (names, tool paths, ports, supervisor pid)
//	supervisor.json   what the supervisor is doing (phase, controller pid, restarts)
//	supervisor.pid    the supervisor's pid, for people and scripts
//	kubeconfig        the cluster's kubeconfig (context paddock-NAME)
//	logs/             each component's log, supervisor.log, agent-sandbox-controller.log,
//	                  the API server's audit.log
//	controlplane/     the cluster's PKI, the components' pid files and kubeconfig, etcd's data,
//	                  the API server's audit-policy.yaml
//	node/             the real node's configuration and state
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
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/paddock-platform/paddock/internal/paths"
	"github.com/paddock-platform/paddock/internal/termtext"
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
	// Where says how the cluster is reached once it runs (its kubeconfig and
	// context); it touches nothing.
	Where() *Info
}

// Info says how to reach a running cluster.
type Info struct {
	Name       string `json:"name"`
	Kubeconfig string `json:"kubeconfig"`
	Context    string `json:"context"`
	Dir        string `json:"dir"`
	LogsDir    string `json:"logsDir"`
	// AuditLog is the API server's audit log (JSON lines, audit.k8s.io/v1
	// events, under the policy manifests.Audit), readable by the user that
	// started the cluster only.
	AuditLog string `json:"auditLog"`
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
	// Nodes chooses the node kind a new cluster gets: NodesReal (kubelet,
	// containerd and gVisor; an error where the machine cannot run them),
	// NodesFake (kwok), or NodesAuto (real where the machine allows it, otherwise
	// fake, saying why). An existing cluster keeps the kind it was created with.
	Nodes string
	// Observability, when set, turns on (true) or off (false) the
	// supervisor's kube-state-metrics and Prometheus (observability.go), on a
	// new or a running cluster; nil keeps what the cluster has.
	Observability *bool
}

type cluster struct {
	name, dir     string
	out           io.Writer
	supervisorCmd []string
	timeout       time.Duration
	nodes         string
	observability *bool
	err           error // invalid options, reported by every method

	state *clusterState // loaded by each operation
}

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$`)

// New returns the cluster described by opts. It does not touch the machine.
func New(opts Options) Cluster {
	c := &cluster{name: opts.Name, dir: opts.Dir, out: opts.Out, timeout: opts.Timeout, nodes: opts.Nodes, observability: opts.Observability}
	if c.nodes != NodesAuto && c.nodes != NodesReal && c.nodes != NodesFake {
		c.err = fmt.Errorf("invalid node kind %q: use %q, %q or empty (real where the machine allows it)", c.nodes, NodesReal, NodesFake)
	}
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

func (c *cluster) Where() *Info { return c.info() }

func (c *cluster) info() *Info {
	return &Info{
		Name:       c.name,
		Kubeconfig: c.kubeconfig(),
		Context:    kubeContext(c.name),
		Dir:        c.dir,
		LogsDir:    c.logsDir(),
		AuditLog:   c.auditLog(),
	}
}

func (c *cluster) kubeconfig() string { return filepath.Join(c.dir, kubeconfigFile) }

// resolveNodeTools adds the real node's pinned tools to bins.
func resolveNodeTools(bins map[string]string) error {
	for _, t := range nodeTools() {
		p, err := paths.Tool(t)
		if err != nil {
			return err
		}
		bins[t] = p
	}
	return nil
}
func (c *cluster) logsDir() string { return filepath.Join(c.dir, logsDir) }

// progress prints one message, wrapped to the terminal's width.
func (c *cluster) progress(format string, args ...any) {
	fmt.Fprint(c.out, termtext.Wrap(fmt.Sprintf(format, args...), "", "  "))
}

// stepRoom is kept free on a step's last line for the time that ends it.
const stepRoom = len(" 1m23.4s")

// step prints "msg… " and returns a function that finishes the line with the
// elapsed time, or with "failed" when given an error.
func (c *cluster) step(format string, args ...any) func(error) {
	start := time.Now()
	// Wrapped with room left for the time on its last line.
	head := strings.TrimSuffix(termtext.Wrap(fmt.Sprintf(format, args...)+"…"+strings.Repeat("\u00a0", stepRoom), "", "  "), "\n")
	fmt.Fprint(c.out, strings.TrimRight(head, "\u00a0")+" ")
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

// resolveTools finds every pinned binary every cluster needs, or returns the
// first *paths.ErrToolMissing.
func resolveTools() (map[string]string, error) {
	bins := map[string]string{}
	for _, t := range controlPlaneTools {
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
