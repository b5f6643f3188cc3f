package rules

import (
	"github.com/paddock-platform/paddock/internal/gcpinputs"
)

func init() {
	register(Rule{
		ID: "GCP-006", Title: "Node pool names and sizes",
		Hint: "Name pools with 1-40 lowercase letters, digits and dashes, each once, and give the autoscaler 0 <= min <= max, max >= 1 (min >= 1 for the system pool).",
		check: func(p gcpinputs.PlatformArgs) []Violation {
			var out []Violation
			seen := map[string]bool{}
			for _, e := range allPools(p) {
				np := e.pool
				if !poolNameRE.MatchString(np.Name) {
					out = append(out, v(e.addr, "name", "%q is not a valid node pool name", np.Name))
				}
				if seen[np.Name] {
					out = append(out, v(e.addr, "name", "node pool %q is declared twice (the system pool is %q)", np.Name, p.SystemPool.Name))
				}
				seen[np.Name] = true
				if np.MinNodes < 0 || np.MaxNodes < 1 || np.MinNodes > np.MaxNodes {
					out = append(out, v(e.addr, "autoscaling", "min %d, max %d: want 0 <= min <= max and max >= 1", np.MinNodes, np.MaxNodes))
				} else if e.addr == "system_pool" && np.MinNodes < 1 {
					// Every other pool is tainted for sandboxes: with the system
					// pool at zero, kube-dns, GKE's agents and the Agent Sandbox
					// controller (and its webhook) have no node until the
					// autoscaler reacts to a pending pod, and claims fail meanwhile.
					out = append(out, v(e.addr, "autoscaling", "min %d: the system pool must keep at least one node (GKE's own workloads and the Agent Sandbox controller run only there)", np.MinNodes))
				}
				if !machineRE.MatchString(np.MachineType) {
					out = append(out, v(e.addr, "machine_type", "%q is not a Compute Engine machine type", np.MachineType))
				}
				if np.DiskSizeGB != 0 && np.DiskSizeGB < 10 {
					out = append(out, v(e.addr, "disk_size_gb", "%d GB is below GKE's 10 GB minimum", np.DiskSizeGB))
				}
			}
			return out
		},
	})
}
