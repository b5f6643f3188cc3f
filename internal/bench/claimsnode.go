package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The claims benchmark's pool sized for its node: how many sandboxes of
// the template the node (and the tenant's quota) hold, found from what the
// scheduler and the quota count, not guessed.

// NodeFit is how many sandboxes of one template a node holds.
type NodeFit struct {
	Node string `json:"node"`
	// Holds is how many sandboxes of the template fit at once: on the
	// node, with what else runs there, and within the tenant's quota.
	Holds int `json:"holds"`
	// Bound names what stops one more: the node's allocatable or the
	// quota's hard limit that runs out first, with its figures.
	Bound string `json:"bound"`
	// Sandbox is what one sandbox's pod asks for (requests, with the
	// runtime's overhead).
	Sandbox map[string]string `json:"sandboxRequests"`
	// Pool is the warm pool's size the benchmark chose, and PoolWhy how.
	Pool    int    `json:"pool"`
	PoolWhy string `json:"poolWhy"`
	// SandboxMemory is the memory one running sandbox takes on the machine
	// (the proportional set size of the runsc processes over the sandboxes
	// running), 0 where it was not measured.
	SandboxMemory int64 `json:"sandboxMemoryBytes,omitempty"`
}

// podRequests is what the scheduler counts for a pod: the sum of its
// containers' requests, at least each init container's, plus the runtime's
// overhead.
func podRequests(p *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, c := range p.Spec.Containers {
		addResources(out, c.Resources.Requests)
	}
	for _, c := range p.Spec.InitContainers {
		for k, v := range c.Resources.Requests {
			if q, ok := out[k]; !ok || v.Cmp(q) > 0 {
				out[k] = v.DeepCopy()
			}
		}
	}
	addResources(out, p.Spec.Overhead)
	return out
}

// podLimits is what a quota's limits.* count for a pod: its containers'
// limits plus the runtime's overhead.
func podLimits(p *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, c := range p.Spec.Containers {
		addResources(out, c.Resources.Limits)
	}
	addResources(out, p.Spec.Overhead)
	return out
}

// addResources adds each quantity of in to out's.
func addResources(out, in corev1.ResourceList) {
	for k, v := range in {
		q := out[k]
		q.Add(v)
		out[k] = q
	}
}

// fits is how many more of per fit in free: 0 when none does.
func fits(free, per resource.Quantity) int64 {
	if per.Sign() <= 0 {
		return -1 // not asked for: no bound
	}
	if free.Sign() <= 0 {
		return 0
	}
	return free.MilliValue() / per.MilliValue()
}

// SandboxesFit is how many pods like sandbox (a running sandbox of the
// template, one of onNode) the node holds at once: sandbox itself and the
// ones that still fit beside the pods bound to the node (onNode, finished
// ones left out) by the node's allocatable and pod count, and within each
// quota of the sandbox's namespace (their status' used).
func SandboxesFit(node *corev1.Node, onNode []corev1.Pod, sandbox *corev1.Pod, quotas []corev1.ResourceQuota) NodeFit {
	req, lim := podRequests(sandbox), podLimits(sandbox)
	fit := NodeFit{Node: node.Name, Sandbox: map[string]string{}}
	for k, v := range req {
		fit.Sandbox[string(k)] = v.String()
	}
	used := corev1.ResourceList{}
	pods := 0
	for i := range onNode {
		p := &onNode[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		pods++
		for k, v := range podRequests(p) {
			q := used[k]
			q.Add(v)
			used[k] = q
		}
	}
	more := int64(-1)
	bound := func(n int64, why string) {
		if n >= 0 && (more < 0 || n < more) {
			more, fit.Bound = n, why
		}
	}
	names := make([]string, 0, len(node.Status.Allocatable))
	for k := range node.Status.Allocatable {
		names = append(names, string(k))
	}
	sort.Strings(names)
	for _, name := range names {
		k := corev1.ResourceName(name)
		alloc := node.Status.Allocatable[k]
		if k == corev1.ResourcePods {
			n := alloc.Value() - int64(pods)
			bound(max(n, 0), fmt.Sprintf("node %s: %d pods allocatable, %d bound to it", node.Name, alloc.Value(), pods))
			continue
		}
		per, ok := req[k]
		if !ok {
			continue
		}
		free := alloc.DeepCopy()
		free.Sub(used[k])
		bound(fits(free, per), fmt.Sprintf("node %s: %s %s allocatable, %s requested by its %d pods, %s a sandbox", node.Name, k, alloc.String(), qty(used[k]), pods, per.String()))
	}
	for _, rq := range quotas {
		for k, hard := range rq.Status.Hard {
			var per resource.Quantity
			switch name := string(k); {
			case k == corev1.ResourcePods:
				per = resource.MustParse("1")
			case strings.HasPrefix(name, "limits."):
				per = lim[corev1.ResourceName(strings.TrimPrefix(name, "limits."))]
			case strings.HasPrefix(name, "requests."):
				per = req[corev1.ResourceName(strings.TrimPrefix(name, "requests."))]
			case k == corev1.ResourceCPU || k == corev1.ResourceMemory || k == corev1.ResourceEphemeralStorage:
				per = req[k]
			default:
				continue
			}
			free := hard.DeepCopy()
			free.Sub(rq.Status.Used[k])
			bound(fits(free, per), fmt.Sprintf("quota %s/%s: %s %s hard, %s used, %s a sandbox", rq.Namespace, rq.Name, k, hard.String(), qty(rq.Status.Used[k]), per.String()))
		}
	}
	if more < 0 {
		more, fit.Bound = 0, "nothing bounds it"
	}
	fit.Holds = 1 + int(more)
	return fit
}

func qty(q resource.Quantity) string {
	if q.IsZero() {
		return "0"
	}
	return q.String()
}

// PoolForNode is the warm pool the claims benchmark keeps on a node that
// holds holds sandboxes: one fewer, so a claim the pool cannot serve (a
// cold start, or a burst's claim beyond the pool) and the pool's refill
// after a hit still find a place; at least 1.
func PoolForNode(holds int) (int, string) {
	if holds <= 1 {
		return 1, fmt.Sprintf("the node holds %d sandbox(es): a pool of 1", holds)
	}
	return holds - 1, fmt.Sprintf("the node holds %d sandboxes: a pool of %d leaves one place for a sandbox started on a miss and the pool's refill", holds, holds-1)
}

// RunscMemory is the proportional set size of the machine's runsc
// processes (the gVisor sandboxes, their gofers and stubs, and their
// containerd shims): the memory the running gVisor sandboxes take, all of
// them. It reads /proc: 0 where there is none.
func RunscMemory() int64 {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var total int64
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil {
			continue
		}
		exe, _, _ := strings.Cut(string(cmdline), "\x00")
		if !strings.Contains(filepath.Base(exe), "runsc") {
			continue
		}
		if smaps, err := os.ReadFile(filepath.Join(dir, "smaps_rollup")); err == nil {
			total += pssOf(string(smaps))
		}
	}
	return total
}

// pssOf reads the Pss line of /proc/PID/smaps_rollup, in bytes.
func pssOf(smaps string) int64 {
	for _, line := range strings.Split(smaps, "\n") {
		if v, ok := strings.CutPrefix(line, "Pss:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// FitNode finds how many sandboxes like the running ones of namespace the
// node they run on holds (SandboxesFit): it waits for one of the
// namespace's pods to be Ready on a node, then reads that node, the pods
// bound to it and the namespace's quotas.
func FitNode(ctx context.Context, kube kubernetes.Interface, namespace string, timeout time.Duration) (NodeFit, error) {
	deadline := time.Now().Add(timeout)
	var sandbox *corev1.Pod
	for sandbox == nil {
		l, err := kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return NodeFit{}, err
		}
		for i := range l.Items {
			if p := &l.Items[i]; p.Spec.NodeName != "" && podIsReady(p) {
				sandbox = p
				break
			}
		}
		if sandbox != nil {
			break
		}
		if time.Now().After(deadline) {
			return NodeFit{}, fmt.Errorf("no pod of %s Ready on a node after %s: nothing to size the pool from", namespace, timeout)
		}
		select {
		case <-ctx.Done():
			return NodeFit{}, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	node, err := kube.CoreV1().Nodes().Get(ctx, sandbox.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		return NodeFit{}, err
	}
	onNode, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node.Name})
	if err != nil {
		return NodeFit{}, err
	}
	quotas, err := kube.CoreV1().ResourceQuotas(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return NodeFit{}, err
	}
	return SandboxesFit(node, onNode.Items, sandbox, quotas.Items), nil
}

// SandboxMemory waits until want pods of namespace are Ready, then returns
// the memory of the machine's runsc processes (RunscMemory) over the pods
// of a runtime class running in the cluster: what one gVisor sandbox takes
// (0 where none runs).
func SandboxMemory(ctx context.Context, kube kubernetes.Interface, namespace string, want int, timeout time.Duration) (int64, error) {
	deadline := time.Now().Add(timeout)
	for {
		l, err := kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		ready := 0
		for i := range l.Items {
			if podIsReady(&l.Items[i]) {
				ready++
			}
		}
		if ready >= want {
			break
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%d of %d pods of %s Ready after %s", ready, want, namespace, timeout)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	all, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	running := 0
	for _, p := range all.Items {
		if p.Spec.RuntimeClassName != nil && p.Status.Phase == corev1.PodRunning {
			running++
		}
	}
	if running == 0 {
		return 0, nil
	}
	return RunscMemory() / int64(running), nil
}

func podIsReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// write says how the claims' pool was sized, when it was sized
// for the node.
func (f *NodeFit) write(w io.Writer) {
	if f == nil {
		return
	}
	var req []string
	for _, k := range []string{"cpu", "memory", "ephemeral-storage"} {
		if v, ok := f.Sandbox[k]; ok {
			req = append(req, k+" "+v)
		}
	}
	fmt.Fprintf(w, "\nThe warm pool of %d was sized for the node: a sandbox of the template asks for %s; the node and the tenant's quota hold %d such sandboxes at once (what stops one more: %s). %s.", f.Pool, strings.Join(req, ", "), f.Holds, f.Bound, upperFirst(f.PoolWhy))
	if f.SandboxMemory > 0 {
		fmt.Fprintf(w, " A running sandbox took about %s of the machine's memory (PSS of the runsc processes over the node's gVisor pods, with the pool full).", MiB(f.SandboxMemory))
	}
	fmt.Fprintln(w)
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// CarryClaimModes keeps, in res, the claims rows of old whose modes this run
// did not measure (ran: the modes it did), in the order warm, cold, burst,
// and returns the note that says so and from which binary ("" when none is
// carried). Such rows were measured on old's node: when res's node kind
// differs, nothing is carried.
func CarryClaimModes(res, old *Results, ran []string) string {
	if old == nil || old.Paddock == nil || old.ClaimsNodes != res.ClaimsNodes {
		return ""
	}
	var kept []string
	byMode := map[string]ClaimsResult{}
	for _, r := range res.Claims {
		byMode[r.Mode] = r
	}
	for _, r := range old.Claims {
		if _, ok := byMode[r.Mode]; ok || slices.Contains(ran, r.Mode) {
			continue
		}
		byMode[r.Mode] = r
		kept = append(kept, r.Mode)
	}
	if len(kept) == 0 {
		return ""
	}
	res.Claims = res.Claims[:0:0]
	for _, m := range []string{ModeWarm, ModeCold, ModeBurst} {
		if r, ok := byMode[m]; ok {
			res.Claims = append(res.Claims, r)
		}
	}
	by := old.MeasuredOf(SectionClaims)
	return fmt.Sprintf("Sandbox start through claims: this run measured %s (-claims-modes); the %s rows are carried over from binary %.12s (%s).", strings.Join(ran, ", "), strings.Join(kept, " and "), by.Paddock.Commit, by.Date)
}
