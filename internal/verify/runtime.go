// Runtime checks: what only a running pod can show. These are the one place
// verify writes: the network probe (network.go) creates a control namespace
// of its own and short-lived pods there and in each tenant's namespace
// (labelled paddock.dev/probe, deleted before the check returns), and the
// sandbox check reads a warm pool's sandbox from inside with exec. Probes
// send traffic only to pods of the cluster: the probe's own target pods and
// the cluster resolver.

package verify

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/pools"
)

// Execer runs a command in a pod's container.
type Execer interface {
	Exec(ctx context.Context, namespace, pod, container string, cmd []string) (stdout, stderr string, err error)
}

// restExecer execs through the API server, as kubectl exec does.
type restExecer struct{ cfg *rest.Config }

func (e restExecer) Exec(ctx context.Context, namespace, pod, container string, cmd []string) (string, string, error) {
	client, err := rest.RESTClientFor(restClientConfig(e.cfg))
	if err != nil {
		return "", "", err
	}
	req := client.Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(e.cfg, "GET", req.URL().String())
	if err != nil {
		return "", "", err
	}
	spdy, err := remotecommand.NewSPDYExecutor(e.cfg, "POST", req.URL())
	if err != nil {
		return "", "", err
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, httpstream.IsUpgradeFailure)
	if err != nil {
		return "", "", err
	}
	var out, errOut bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut})
	return out.String(), errOut.String(), err
}

func restClientConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.APIPath = "/api"
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	return c
}

// Probe labels and timings.
const (
	probeLabel = "paddock.dev/probe"
	probePort  = 8080
	// probeGreeting is what the target pod answers on probePort.
	probeGreeting = "paddock-probe"
	// denialStreak is how many refusals in a row count as denied: one failed
	// connection can have another cause, three in a row after the policy had
	// time to apply cannot pass by luck.
	denialStreak = 3
)

// probeTimeouts bound each wait of the network probe: a pod starting, a
// series of attempts at one connection, a target answering on its loopback,
// and how long a connection that must be refused may keep getting through
// before it fails (longer than a policy takes to reach a new pod).
var probeTimeouts = struct{ start, reach, loopback, hold time.Duration }{
	start: 90 * time.Second, reach: 45 * time.Second, loopback: 15 * time.Second, hold: 15 * time.Second,
}

// probePod is a pod Pod Security "restricted" admits, on the tenant's runtime
// class, running cmd in the probe image.
func probePod(ns, role, image, runtimeClass string, cmd []string) *corev1.Pod {
	uid, yes, no := int64(65534), true, false
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "paddock-probe-" + role + "-", Namespace: ns,
			Labels: map[string]string{probeLabel: role, "app.kubernetes.io/managed-by": "paddock-verify"},
		},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: &no,
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: &uid, RunAsGroup: &uid, RunAsNonRoot: &yes,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "probe", Image: image, ImagePullPolicy: corev1.PullIfNotPresent, Command: cmd,
				// Small and explicit: the tenant's LimitRange defaults are sized
				// for agents, and the probe must fit beside a full warm pool.
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi"), corev1.ResourceEphemeralStorage: resource.MustParse("16Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi"), corev1.ResourceEphemeralStorage: resource.MustParse("64Mi")},
				},
				SecurityContext: &corev1.SecurityContext{ReadOnlyRootFilesystem: &yes, AllowPrivilegeEscalation: &no,
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}
	if runtimeClass != "" {
		p.Spec.RuntimeClassName = &runtimeClass
	}
	return p
}

// tenantRuntimeClass is the runtime class the tenant's sandboxes use (its first
// template's), so the admission policies that pin sandboxes to the allowed
// runtime classes admit the probe.
func tenantRuntimeClass(t model.Tenant) string {
	for _, tpl := range t.Templates {
		if tpl.RuntimeClass != "" {
			return tpl.RuntimeClass
		}
	}
	return ""
}

// errNoRealNode says a pod landed on a node where no container runs.
type errNoRealNode struct{ node string }

func (e errNoRealNode) Error() string {
	return "node " + e.node + " is a kwok node: no container runs there"
}

// isFakeNode reports whether name is a kwok node.
func (v *Verifier) isFakeNode(ctx context.Context, name string) bool {
	n, err := v.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	return err == nil && isKwok(n)
}

func isKwok(n *corev1.Node) bool { return n.Annotations["kwok.x-k8s.io/node"] == "fake" }

// startProbe creates a probe pod and waits until it runs with an address.
func (v *Verifier) startProbe(ctx context.Context, p *corev1.Pod) (*corev1.Pod, error) {
	created, err := v.kube.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{FieldManager: "paddock-verify"})
	if err != nil {
		return nil, fmt.Errorf("create probe pod: %w", err)
	}
	deadline := time.Now().Add(probeTimeouts.start)
	for {
		cur, err := v.kube.CoreV1().Pods(p.Namespace).Get(ctx, created.Name, metav1.GetOptions{})
		if err == nil {
			if cur.Spec.NodeName != "" && v.isFakeNode(ctx, cur.Spec.NodeName) {
				return cur, errNoRealNode{cur.Spec.NodeName}
			}
			if cur.Status.Phase == corev1.PodRunning && cur.Status.PodIP != "" {
				return cur, nil
			}
		}
		if time.Now().After(deadline) {
			why := "not running"
			if cur != nil {
				why = podWaitReason(cur)
			}
			return created, fmt.Errorf("probe pod %s did not run within %s (%s)", created.Name, probeTimeouts.start, why)
		}
		select {
		case <-ctx.Done():
			return created, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func podWaitReason(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return w.Reason + ": " + w.Message
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			return c.Message
		}
	}
	return "phase " + string(p.Status.Phase)
}

// deleteProbes removes the probe pods, whatever the check's outcome.
func (v *Verifier) deleteProbes(pods ...*corev1.Pod) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	zero := int64(0)
	for _, p := range pods {
		if p != nil && p.Name != "" {
			_ = v.kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		}
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// sandboxScript prints what a sandbox shows of itself, in sections, using only
// the shell, cat, uname and dmesg: the process status (UID, capabilities),
// whether the root filesystem takes a write (in /var/tmp, world-writable where
// it exists, so a refusal there is the filesystem's, not the UID's), whether a
// token is mounted, the kernel release it runs on (uname -r, /proc/version)
// and the kernel's boot log.
const sandboxScript = `echo '== status'; cat /proc/self/status
echo '== rootfs'; for d in /var/tmp /; do [ -d "$d" ] || continue; f="$d/.paddock-probe"; if ( : > "$f" ) 2>/dev/null; then rm -f "$f"; echo writable; else ( : > "$f" ) 2>&1; fi; break; done
echo '== token'; if [ -e /var/run/secrets/kubernetes.io/serviceaccount/token ]; then echo mounted; else echo absent; fi
echo '== uname'; uname -r 2>&1
echo '== version'; cat /proc/version 2>&1
echo '== kernel'; dmesg 2>&1 | head -n 5`

// sandboxFacts is what sandboxScript printed, read.
type sandboxFacts struct {
	UID          int64
	CapEff       string // hex masks; "" when the kernel does not show them
	CapPrm       string
	CapBnd       string
	RootReadOnly bool
	RootWritable bool
	TokenMounted bool
	// Release is the kernel release the sandbox sees (uname -r, else the
	// word after "Linux version" in /proc/version); "" when neither said.
	Release string
	Kernel  string // the boot log's first lines
}

func parseSandboxFacts(out string) (sandboxFacts, error) {
	f := sandboxFacts{UID: -1}
	section := ""
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "== ") {
			section = strings.TrimPrefix(line, "== ")
			continue
		}
		switch section {
		case "status":
			k, val, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			fields := strings.Fields(val)
			if len(fields) == 0 {
				continue
			}
			switch k {
			case "Uid":
				// real, effective, saved, filesystem: the effective one acts.
				if len(fields) > 1 {
					f.UID, _ = strconv.ParseInt(fields[1], 10, 64)
				}
			case "CapEff":
				f.CapEff = fields[0]
			case "CapPrm":
				f.CapPrm = fields[0]
			case "CapBnd":
				f.CapBnd = fields[0]
			}
		case "rootfs":
			switch {
			case strings.TrimSpace(line) == "writable":
				f.RootWritable = true
			case strings.Contains(line, "Read-only file system"):
				f.RootReadOnly = true
			}
		case "token":
			if strings.TrimSpace(line) == "mounted" {
				f.TokenMounted = true
			}
		case "uname":
			if r := strings.TrimSpace(line); r != "" && !strings.Contains(r, " ") {
				f.Release = r
			}
		case "version":
			if f.Release == "" {
				if _, rest, ok := strings.Cut(line, "Linux version "); ok {
					f.Release = firstField(rest)
				}
			}
		case "kernel":
			f.Kernel += line + "\n"
		}
	}
	if f.UID < 0 {
		return f, fmt.Errorf("no Uid line in /proc/self/status (output: %q)", firstLine(out))
	}
	return f, nil
}

func firstField(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

// judgeSandbox compares what a sandbox showed with what its template declares
// (a waived control is expected loosened) and lists every mismatch; evidence
// the runtime does not give is listed apart as unverified. nodeKernel is the
// kernel release of the sandbox's node (node.status.nodeInfo.kernelVersion):
// under a sandbox runtime (gVisor, Kata) the sandbox must see another kernel,
// or it shares the host's.
func judgeSandbox(tpl model.Template, handler, nodeKernel string, f sandboxFacts) (problems, held, unverified []string) {
	switch {
	case f.UID == 0 && !tpl.AllowRoot:
		problems = append(problems, "runs as root")
	case tpl.RunAsUser != 0 && f.UID != tpl.RunAsUser:
		problems = append(problems, fmt.Sprintf("runs as UID %d, the template says %d", f.UID, tpl.RunAsUser))
	default:
		held = append(held, fmt.Sprintf("UID %d", f.UID))
	}
	switch {
	case tpl.WritableRootFilesystem:
		held = append(held, "root filesystem writable (waived)")
	case f.RootWritable:
		problems = append(problems, "the root filesystem takes a write")
	case f.RootReadOnly:
		held = append(held, "read-only root")
	default:
		unverified = append(unverified, "root filesystem (the write was refused for another reason than read-only)")
	}
	switch {
	case f.TokenMounted && !tpl.AutomountServiceAccountToken:
		problems = append(problems, "a service-account token is mounted")
	case !f.TokenMounted:
		held = append(held, "no token")
	}
	if len(tpl.AddCapabilities) == 0 {
		var capsHeld []string
		for _, c := range []struct{ name, mask string }{{"CapEff", f.CapEff}, {"CapPrm", f.CapPrm}, {"CapBnd", f.CapBnd}} {
			switch {
			case c.mask == "":
			case strings.Trim(c.mask, "0") != "":
				problems = append(problems, fmt.Sprintf("%s is %s, not empty", c.name, c.mask))
			default:
				capsHeld = append(capsHeld, c.name)
			}
		}
		if len(capsHeld) == 0 {
			unverified = append(unverified, "capabilities (not shown in /proc/self/status)")
		} else {
			held = append(held, "no capabilities ("+strings.Join(capsHeld, ", ")+" empty)")
		}
	}
	isolation := model.HandlerIsolation(handler)
	ownKernel := false
	if isolation != "" {
		switch {
		case nodeKernel == "":
			unverified = append(unverified, "its own kernel (the node reports no kernel version to compare with)")
		case f.Release == "":
			unverified = append(unverified, "its own kernel (neither uname -r nor /proc/version answered)")
		case f.Release == nodeKernel:
			problems = append(problems, fmt.Sprintf("it sees the node's own kernel %s: it shares the host kernel, so runtime handler %s does not sandbox it", nodeKernel, handler))
		default:
			ownKernel = true
			held = append(held, fmt.Sprintf("own kernel %s (the node runs %s)", f.Release, nodeKernel))
		}
	}
	// gVisor's boot log is evidence beside the kernel release: a log that
	// shows another kernel is a failure; no log at all matters only when the
	// release could not tell.
	if isolation == model.IsolationGVisor {
		switch {
		case strings.Contains(f.Kernel, "gVisor"):
			held = append(held, "gVisor boot log")
		case strings.Contains(f.Kernel, "not found") || strings.TrimSpace(f.Kernel) == "":
			if !ownKernel {
				unverified = append(unverified, "gVisor (the image has no dmesg)")
			}
		default:
			problems = append(problems, "the kernel's boot log does not show gVisor: "+firstLine(f.Kernel))
		}
	}
	return problems, held, unverified
}

// checkSandboxRuntime reads every ready sandbox of each warm pool from inside:
// the controls the template declares must hold where the agent's code runs.
func checkSandboxRuntime(ctx context.Context, v *Verifier) []Result {
	if v.opts.NoProbes {
		return []Result{notVerifiable("cluster", "runtime probes are off (--no-probes)")}
	}
	handlers := map[string]string{}
	for _, rc := range v.p.RuntimeClasses {
		handlers[rc.Name] = rc.Handler
	}
	var out []Result
	for _, t := range v.p.Tenants {
		if len(t.WarmPools) == 0 {
			continue
		}
		pods, err := v.kube.CoreV1().Pods(t.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			out = append(out, fail(t.Namespace, "listing pods: %v", err))
			continue
		}
		sandboxes, err := v.dyn.Resource(sandboxesGVR).Namespace(t.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			out = append(out, fail(t.Namespace, "listing sandboxes: %v", err))
			continue
		}
		for _, wp := range t.WarmPools {
			subject := t.Namespace + "/" + wp.Name
			tpl, ok := templateNamed(t, wp.Template)
			if !ok {
				out = append(out, fail(subject, "the pool's template %q is not in the spec", wp.Template))
				continue
			}
			ready := readySandboxPods(wp.Name, sandboxes.Items, pods.Items)
			if len(ready) == 0 {
				out = append(out, notVerifiable(subject, "the pool has no ready sandbox with a ready pod to look into (V07 says why)"))
				continue
			}
			// Every ready sandbox, not one: a sandbox started while the runtime
			// class was swapped sits beside those started before it.
			var failed, unshown, passed []string
			for _, pod := range ready {
				status, says := v.lookInto(ctx, t.Namespace, pod, tpl, handlers[tpl.RuntimeClass])
				switch status {
				case Fail:
					failed = append(failed, says)
				case NotVerifiable:
					unshown = append(unshown, says)
				default:
					passed = append(passed, says)
				}
			}
			switch {
			case len(failed) > 0:
				out = append(out, fail(subject, "%s", strings.Join(failed, "; ")))
			case len(unshown) > 0:
				out = append(out, notVerifiable(subject, "%s", strings.Join(append(unshown, passed...), "; ")))
			default:
				out = append(out, pass(subject, "%d ready sandbox(es): %s", len(passed), strings.Join(passed, "; ")))
			}
		}
	}
	return out
}

// lookInto reads one ready sandbox pod from inside and judges it against its
// template: the status and what to say of it, naming the sandbox.
func (v *Verifier) lookInto(ctx context.Context, ns string, pod *corev1.Pod, tpl model.Template, handler string) (Status, string) {
	node, err := v.kube.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		return Fail, fmt.Sprintf("sandbox pod %s: its node %s: %v", pod.Name, pod.Spec.NodeName, err)
	}
	if isKwok(node) {
		return NotVerifiable, fmt.Sprintf("sandbox pod %s is on kwok node %s: nothing runs there to look into", pod.Name, pod.Spec.NodeName)
	}
	stdout, stderr, err := v.exec.Exec(ctx, ns, pod.Name, pod.Spec.Containers[0].Name, []string{"sh", "-c", sandboxScript})
	if err != nil {
		return NotVerifiable, fmt.Sprintf("exec into %s: %v %s (the image needs sh and cat)", pod.Name, err, firstLine(stderr))
	}
	facts, err := parseSandboxFacts(stdout)
	if err != nil {
		return NotVerifiable, fmt.Sprintf("%s: %v", pod.Name, err)
	}
	problems, held, unverified := judgeSandbox(tpl, handler, node.Status.NodeInfo.KernelVersion, facts)
	switch {
	case len(problems) > 0:
		return Fail, fmt.Sprintf("sandbox %s: %s", pod.Name, strings.Join(problems, "; "))
	case len(unverified) > 0:
		return NotVerifiable, fmt.Sprintf("sandbox %s holds %s; not shown: %s", pod.Name, strings.Join(held, ", "), strings.Join(unverified, ", "))
	}
	return Pass, fmt.Sprintf("sandbox %s: %s", pod.Name, strings.Join(held, ", "))
}

func templateNamed(t model.Tenant, name string) (model.Template, bool) {
	for _, tpl := range t.Templates {
		if tpl.Name == name {
			return tpl, true
		}
	}
	return model.Template{}, false
}

// readySandboxPods are the ready pods of the ready sandboxes the warm pool
// owns (a claimed one is the claim's), sorted by name.
func readySandboxPods(pool string, sandboxes []unstructured.Unstructured, pods []corev1.Pod) []*corev1.Pod {
	byName := map[string]*corev1.Pod{}
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				byName[p.Name] = p
			}
		}
	}
	var out []*corev1.Pod
	for i := range sandboxes {
		sb := &sandboxes[i]
		if sb.GetDeletionTimestamp() != nil || !ownedBy(sb, "SandboxWarmPool", pool, "") || !pools.ConditionTrue(sb, "Ready") {
			continue
		}
		name := sb.GetName()
		if n := sb.GetAnnotations()[sandboxPodNameAnnotation]; n != "" {
			name = n
		}
		if p := byName[name]; p != nil {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
