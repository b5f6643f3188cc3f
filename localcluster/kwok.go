package localcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The control plane components kwokctl runs for the binary runtime, in start order.
// The key is the component name kwokctl uses for its pid and log files; the value
// is the pinned tool (paths.Tool) that provides its binary.
var kwokComponents = []struct{ Name, Tool string }{
	{"etcd", "etcd"},
	{"kube-apiserver", "kube-apiserver"},
	{"kube-controller-manager", "kube-controller-manager"},
	{"kube-scheduler", "kube-scheduler"},
	{"kwok-controller", "kwok"},
}

// The pinned tools Up needs, by the names `make tools` links into PADDOCK_HOME/bin.
var requiredTools = []string{
	"kwokctl", "kwok", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
	"agent-sandbox-controller",
}

// kwokClusterDir is where kwokctl keeps one cluster: pki, pids, logs, config.
func (c *cluster) kwokClusterDir() string {
	return filepath.Join(c.dir, kwokDir, "clusters", c.name)
}

func (c *cluster) componentPIDFile(name string) string {
	return filepath.Join(c.kwokClusterDir(), "pids", name+".pid")
}

func (c *cluster) componentLog(name string) string {
	return filepath.Join(c.kwokClusterDir(), "logs", name+".log")
}

// kwokctlEnv is the environment kwokctl runs with: the caller's, without any KWOK_*
// setting that could redirect it (a user's KWOK_RUNTIME, KWOK_WORKDIR, …), with
// the cluster's own work directory, and with shimDir first on PATH so the kubectl
// kwokctl finds is paddock's shim (see writeKubectlShim).
func kwokctlEnv(base []string, workdir, shimDir string) []string {
	env := make([]string, 0, len(base)+3)
	path := ""
	for _, kv := range base {
		switch {
		case strings.HasPrefix(kv, "KWOK_"):
		case strings.HasPrefix(kv, "PATH="):
			path = strings.TrimPrefix(kv, "PATH=")
		default:
			env = append(env, kv)
		}
	}
	if path == "" {
		path = shimDir
	} else {
		path = shimDir + string(os.PathListSeparator) + path
	}
	kubectl := filepath.Join(shimDir, "kubectl")
	return append(env, "PATH="+path, "KWOK_WORKDIR="+workdir, "KWOK_KUBECTL_BINARY="+kubectl)
}

// kwokctlCreateArgs are the arguments of `kwokctl create cluster`: binary runtime,
// every binary a local path (kwokctl never downloads one it is given), the
// kubeconfig in Dir (never the user's ~/.kube/config).
func kwokctlCreateArgs(name, kubeconfig string, bins map[string]string) []string {
	return []string{
		"--name", name,
		"create", "cluster",
		"--runtime", "binary",
		"--etcd-binary", bins["etcd"],
		"--kube-apiserver-binary", bins["kube-apiserver"],
		"--kube-controller-manager-binary", bins["kube-controller-manager"],
		"--kube-scheduler-binary", bins["kube-scheduler"],
		"--kwok-controller-binary", bins["kwok"],
		"--kubeconfig", kubeconfig,
		"--quiet-pull",
	}
}

// writeKubectlShim writes Dir/bin/kubectl, the only kubectl kwokctl sees, and
// returns its directory. kwokctl's binary runtime uses kubectl for nothing but
// polling `get --raw /version` and `/healthz` after it forks the components, and
// would download one when none is on PATH; with a real kubectl it also waits two
// minutes on an API server that cannot start. The shim answers "ok" at once, and
// paddock waits for the API server itself with client-go, failing within seconds
// (with the component's log) when etcd or the API server exits.
func (c *cluster) writeKubectlShim() (string, error) {
	dir := filepath.Join(c.dir, shimDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	const script = "#!/bin/sh\n# Written by paddock (localcluster): kwokctl only polls /version and /healthz\n# with kubectl; paddock checks the API server itself with client-go.\nprintf ok\n"
	if err := os.WriteFile(filepath.Join(dir, "kubectl"), []byte(script), 0o755); err != nil {
		return "", err
	}
	return dir, nil
}

// kwokctl runs one kwokctl command, appending its output to logs/kwokctl.log. On
// failure the error names the command, quotes the end of its output and says
// where the full log is.
func (c *cluster) kwokctl(ctx context.Context, args ...string) error {
	bin := c.state.Binaries["kwokctl"]
	if bin == "" {
		return errors.New("kwokctl path unknown")
	}
	shim, err := c.writeKubectlShim()
	if err != nil {
		return err
	}
	logPath := filepath.Join(c.logsDir(), kwokctlLog)
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "\n=== %s kwokctl %s\n", time.Now().Format(time.RFC3339), strings.Join(args, " "))

	var tail bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = kwokctlEnv(os.Environ(), filepath.Join(c.dir, kwokDir), shim)
	cmd.Dir = c.dir
	cmd.Stdout = logf
	cmd.Stderr = &teeWriter{w: logf, buf: &tail}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kwokctl %s failed (%v)%s\n  full log: %s", kwokctlVerb(args), err, indentTail(tail.String(), 12), logPath)
	}
	return nil
}

// kwokctlVerb is the "create cluster" part of a kwokctl command line.
func kwokctlVerb(args []string) string {
	var verb []string
	for i := 0; i < len(args) && len(verb) < 2; i++ {
		switch {
		case args[i] == "--name":
			i++
		case !strings.HasPrefix(args[i], "-"):
			verb = append(verb, args[i])
		}
	}
	return strings.Join(verb, " ")
}

// teeWriter copies writes to w and keeps them in buf.
type teeWriter struct {
	w   *os.File
	buf *bytes.Buffer
}

func (t *teeWriter) Write(p []byte) (int, error) {
	t.buf.Write(p)
	return t.w.Write(p)
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

// componentInfo is what Status and Down know about one kwokctl component.
type componentInfo struct {
	Name    string
	PID     int  // from kwokctl's pid file; 0 when there is none
	PIDFile bool // a pid file exists
	Owned   bool // the pid is alive and is this cluster's binary
	Reason  string
}

// inspectComponent reads kwokctl's pid file for a component and checks that the
// pid is alive, runs the pinned binary and belongs to this cluster's work dir.
func (c *cluster) inspectComponent(name, tool string) componentInfo {
	ci := componentInfo{Name: name}
	raw, err := os.ReadFile(c.componentPIDFile(name))
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
	// kwokctl runs the component through a symlink in its own bin dir that points
	// at the pinned tool; /proc/PID/exe shows the final target.
	link := filepath.Join(c.kwokClusterDir(), "bin", name)
	want := resolveExe(link)
	if want == link && c.state != nil && c.state.Binaries[tool] != "" {
		want = resolveExe(c.state.Binaries[tool]) // the link is gone; fall back to the recorded tool
	}
	ci.Owned, ci.Reason = matchBinary(info, want, c.kwokClusterDir())
	return ci
}

// forgetStalePIDs removes kwokctl pid files whose pid is dead or now belongs to a
// process this cluster did not start. kwokctl kills whatever pid its pid file
// names and treats any live pid as "already running", so a stale file must never
// reach it.
func (c *cluster) forgetStalePIDs() {
	for _, comp := range kwokComponents {
		ci := c.inspectComponent(comp.Name, comp.Tool)
		if ci.PIDFile && !ci.Owned {
			_ = os.Remove(c.componentPIDFile(comp.Name))
		}
	}
}

// stopComponents stops the kwokctl components this cluster started, in reverse
// start order, verifying each pid before every signal, and removes their pid files.
func (c *cluster) stopComponents() error {
	var errs []error
	for i := len(kwokComponents) - 1; i >= 0; i-- {
		comp := kwokComponents[i]
		ci := c.inspectComponent(comp.Name, comp.Tool)
		if ci.Owned {
			owned := func() bool { return c.inspectComponent(comp.Name, comp.Tool).Owned }
			if _, err := stopVerified(ci.PID, owned, 10*time.Second); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", comp.Name, err))
				continue
			}
		}
		if ci.PIDFile {
			_ = os.Remove(c.componentPIDFile(comp.Name))
		}
	}
	return errors.Join(errs...)
}
