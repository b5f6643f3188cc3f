package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// restConfig loads the cluster's kubeconfig. timeout bounds each request.
func restConfig(kubeconfig string, timeout time.Duration) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.Timeout = timeout
	cfg.QPS = 50
	cfg.Burst = 100
	cfg.UserAgent = "paddock-localcluster"
	return cfg, nil
}

// apiHealth asks the API server's /readyz. It returns "" when ready, otherwise why
// not.
func apiHealth(ctx context.Context, cs kubernetes.Interface) string {
	body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		if len(body) > 0 {
			return firstLine(string(body))
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // "dial tcp …: connection refused" without the request URL
		}
		return firstLine(err.Error())
	}
	if strings.TrimSpace(string(body)) != "ok" {
		return firstLine(string(body))
	}
	return ""
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// Node shape: one fake node that looks like a GKE Sandbox (gVisor) node to the
// scheduler. kwok manages every node annotated kwok.x-k8s.io/node=fake.
// The label and taint are GKE Sandbox's own (model.GKESandboxKey).
const (
	nodeCount        = 1
	gvisorLabelKey   = model.GKESandboxKey
	gvisorLabelValue = model.IsolationGVisor
)

func nodeName(cluster string, i int) string { return fmt.Sprintf("%s-gvisor-%d", cluster, i) }

// fakeNode builds the Node object for node i of cluster.
func fakeNode(cluster string, i int) *corev1.Node {
	name := nodeName(cluster, i)
	res := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("32"),
		corev1.ResourceMemory:           resource.MustParse("128Gi"),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("500Gi"),
	}
	arch := runtime.GOARCH
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				"kubernetes.io/hostname":           name,
				"kubernetes.io/os":                 "linux",
				"kubernetes.io/arch":               arch,
				"beta.kubernetes.io/os":            "linux",
				"beta.kubernetes.io/arch":          arch,
				"node.kubernetes.io/instance-type": "kwok-fake",
				"type":                             "kwok",
				gvisorLabelKey:                     gvisorLabelValue,
				"app.kubernetes.io/managed-by":     "paddock",
				"paddock.dev/local-cluster":        cluster,
			},
			Annotations: map[string]string{
				"kwok.x-k8s.io/node":           "fake",
				"node.alpha.kubernetes.io/ttl": "0",
			},
		},
		Spec: corev1.NodeSpec{
			Taints: []corev1.Taint{{Key: gvisorLabelKey, Value: gvisorLabelValue, Effect: corev1.TaintEffectNoSchedule}},
		},
		Status: corev1.NodeStatus{
			Capacity:    res,
			Allocatable: res.DeepCopy(),
			Phase:       corev1.NodeRunning,
			NodeInfo: corev1.NodeSystemInfo{
				Architecture:    arch,
				OperatingSystem: "linux",
				KubeletVersion:  "fake",
				KernelVersion:   "gvisor",
			},
		},
	}
}

// ensureNode creates node i, or brings an existing one back to the labels, taint
// and annotation paddock needs (other fields are left as found).
func ensureNode(ctx context.Context, cs kubernetes.Interface, cluster string, i int) error {
	want := fakeNode(cluster, i)
	_, err := cs.CoreV1().Nodes().Create(ctx, want, metav1.CreateOptions{FieldManager: "paddock"})
	if err == nil || !apierrors.IsAlreadyExists(err) {
		return err
	}
	got, err := cs.CoreV1().Nodes().Get(ctx, want.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	changed := false
	if got.Labels == nil {
		got.Labels = map[string]string{}
	}
	for k, v := range want.Labels {
		if got.Labels[k] != v {
			got.Labels[k], changed = v, true
		}
	}
	if got.Annotations == nil {
		got.Annotations = map[string]string{}
	}
	for k, v := range want.Annotations {
		if got.Annotations[k] != v {
			got.Annotations[k], changed = v, true
		}
	}
	if !hasTaint(got.Spec.Taints, want.Spec.Taints[0]) {
		got.Spec.Taints, changed = append(got.Spec.Taints, want.Spec.Taints[0]), true
	}
	if !changed {
		return nil
	}
	_, err = cs.CoreV1().Nodes().Update(ctx, got, metav1.UpdateOptions{FieldManager: "paddock"})
	return err
}

func hasTaint(ts []corev1.Taint, t corev1.Taint) bool {
	for _, x := range ts {
		if x.Key == t.Key && x.Value == t.Value && x.Effect == t.Effect {
			return true
		}
	}
	return false
}

// nodeSchedulable reports whether the node is Ready and the node lifecycle
// controller has lifted the taints it puts on a node that is not (yet) Ready;
// until then no pod without a toleration lands on it.
func nodeSchedulable(n *corev1.Node) bool {
	if !nodeReady(n) {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return false
		}
	}
	return true
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// missingCRDs returns the Agent Sandbox CRDs that are not (or no longer)
// Established, sorted. A CRD being deleted counts as missing.
func missingCRDs(ctx context.Context, dc dynamic.Interface) ([]string, error) {
	list, err := dc.Resource(crdGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	established := map[string]bool{}
	for i := range list.Items {
		if crdEstablished(&list.Items[i]) {
			established[list.Items[i].GetName()] = true
		}
	}
	var missing []string
	for _, n := range agentsandbox.CRDs {
		if !established[n] {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	return missing, nil
}

// crdEstablished reads status.conditions[type=Established] of an unstructured CRD.
func crdEstablished(u *unstructured.Unstructured) bool {
	if u.GetDeletionTimestamp() != nil {
		return false
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		if m["type"] == "Established" {
			return m["status"] == "True"
		}
	}
	return false
}
