package rules

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/paddock-platform/paddock/internal/gcpinputs"
)

func init() {
	register(Rule{
		ID: "GCP-012", Title: "Node labels and taints",
		Hint: "Use Kubernetes label keys and values, and taint effects NoSchedule, PreferNoSchedule or NoExecute; the system pool takes no NoSchedule/NoExecute taint.",
		check: func(p gcpinputs.PlatformArgs) []Violation {
			var out []Violation
			for _, e := range allPools(p) {
				for _, k := range slices.Sorted(maps.Keys(e.pool.Labels)) {
					if errs := validation.IsQualifiedName(k); len(errs) > 0 {
						out = append(out, v(e.addr, "labels", "label key %q: %s", k, strings.Join(errs, "; ")))
					}
					if errs := validation.IsValidLabelValue(e.pool.Labels[k]); len(errs) > 0 {
						out = append(out, v(e.addr, "labels", "label %q value %q: %s", k, e.pool.Labels[k], strings.Join(errs, "; ")))
					}
				}
				for i, t := range e.pool.Taints {
					attr := fmt.Sprintf("taints[%d]", i)
					if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
						out = append(out, v(e.addr, attr, "taint key %q: %s", t.Key, strings.Join(errs, "; ")))
					}
					if errs := validation.IsValidLabelValue(t.Value); len(errs) > 0 {
						out = append(out, v(e.addr, attr, "taint value %q: %s", t.Value, strings.Join(errs, "; ")))
					}
					if !validEffects[t.Effect] {
						out = append(out, v(e.addr, attr, "taint effect %q is not NoSchedule, PreferNoSchedule or NoExecute", t.Effect))
					}
					if e.addr == "system_pool" && t.Effect != gcpinputs.EffectPreferNoSchedule {
						out = append(out, v(e.addr, attr, "a %s taint on the system pool leaves GKE's system workloads nowhere to run", t.Effect))
					}
				}
				for _, k := range slices.Sorted(maps.Keys(e.pool.ResourceLabels)) {
					if !gcpLabelKey.MatchString(k) || !gcpLabelVal.MatchString(e.pool.ResourceLabels[k]) {
						out = append(out, v(e.addr, "resource_labels", "GCP label %q=%q: keys and values are lowercase letters, digits, _ and -", k, e.pool.ResourceLabels[k]))
					}
				}
			}
			for _, k := range slices.Sorted(maps.Keys(p.Cluster.Labels)) {
				if !gcpLabelKey.MatchString(k) || !gcpLabelVal.MatchString(p.Cluster.Labels[k]) {
					out = append(out, v("cluster", "labels", "GCP label %q=%q: keys and values are lowercase letters, digits, _ and -", k, p.Cluster.Labels[k]))
				}
			}
			return out
		},
	})
}
