package bench

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/paddock-platform/paddock/internal/model"
)

// Every create the benchmark times ends at the same point: each warm pool
// with replicas has them Ready, status.readyReplicas equal to spec.replicas.
// paddock waits for it through the pulumi.com/waitFor annotation its pools
// carry (which `render` leaves out); kubectl and the floor wait for it
// after their last apply, so no column compares applying with converging.

// ReadyTimeout bounds the wait (paddock's is each pool's pulumi.com/timeoutSeconds, from its
// create): 1,000 pools on a loaded machine take the controller minutes.
const ReadyTimeout = 15 * time.Minute

const (
	kubectlReadiness = "kubectl runs `kubectl wait --for=jsonpath={.status.readyReplicas}=N` on the platform's pools after its last apply"
	floorReadiness   = "the floor lists the platform's pools until each reports its replicas Ready"
)

// readyWant is the readyReplicas each warm pool of objs must reach, by
// namespace/name; pools of zero replicas have nothing to wait for.
func readyWant(objs []*unstructured.Unstructured) (map[string]int64, error) {
	want := map[string]int64{}
	for _, o := range objs {
		if o.GetKind() != "SandboxWarmPool" {
			continue
		}
		n, found, err := unstructured.NestedInt64(o.Object, "spec", "replicas")
		if err != nil {
			return nil, fmt.Errorf("warm pool %s/%s: %w", o.GetNamespace(), o.GetName(), err)
		}
		if !found {
			n = 1 // the CRD's default
		}
		if n > 0 {
			want[o.GetNamespace()+"/"+o.GetName()] = n
		}
	}
	return want, nil
}

// platformOf is the platform label the rendered objects carry.
func platformOf(objs []*unstructured.Unstructured) string {
	for _, o := range objs {
		if p := o.GetLabels()[model.PlatformLabel]; p != "" {
			return p
		}
	}
	return ""
}

// KubectlWaits are the kubectl arguments (after the kubeconfig) that wait
// for the pools of objs: one wait over all namespaces when every pool has
// the same size, else one per pool.
func KubectlWaits(objs []*unstructured.Unstructured) ([][]string, error) {
	want, err := readyWant(objs)
	if err != nil || len(want) == 0 {
		return nil, err
	}
	resource := warmPoolsGVR.Resource + "." + warmPoolsGVR.Group
	timeout := fmt.Sprintf("--timeout=%s", ReadyTimeout)
	sizes := map[int64]bool{}
	for _, n := range want {
		sizes[n] = true
	}
	platform := platformOf(objs)
	if len(sizes) == 1 && platform != "" {
		for n := range sizes {
			return [][]string{{"wait", fmt.Sprintf("--for=jsonpath={.status.readyReplicas}=%d", n), resource,
				"--all-namespaces", "-l", model.PlatformLabel + "=" + platform, timeout}}, nil
		}
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out [][]string
	for _, k := range keys {
		ns, name, _ := strings.Cut(k, "/")
		out = append(out, []string{"wait", fmt.Sprintf("--for=jsonpath={.status.readyReplicas}=%d", want[k]), resource + "/" + name, "-n", ns, timeout})
	}
	return out, nil
}

// WaitPoolsReady lists the warm pools of objs until each reports its
// replicas Ready, or ReadyTimeout passes.
func WaitPoolsReady(ctx context.Context, dyn dynamic.Interface, objs []*unstructured.Unstructured, every time.Duration) error {
	want, err := readyWant(objs)
	if err != nil || len(want) == 0 {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	opts := metav1.ListOptions{}
	if p := platformOf(objs); p != "" {
		opts.LabelSelector = model.PlatformLabel + "=" + p
	}
	for {
		list, err := dyn.Resource(warmPoolsGVR).List(ctx, opts)
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("listing warm pools: %w", err)
		}
		waiting := 0
		var example string
		if list != nil {
			got := map[string]int64{}
			for _, p := range list.Items {
				n, _, _ := unstructured.NestedInt64(p.Object, "status", "readyReplicas")
				got[p.GetNamespace()+"/"+p.GetName()] = n
			}
			for k, n := range want {
				if got[k] != n {
					waiting++
					example = fmt.Sprintf("%s has %d of %d ready", k, got[k], n)
				}
			}
		}
		if list != nil && waiting == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d warm pool(s) not Ready within %s (%s): %w", waiting, ReadyTimeout, example, ctx.Err())
		case <-time.After(every):
		}
	}
}
