package rules

import (
	"fmt"

	"github.com/paddock-platform/paddock/internal/gcpinputs"
)

func init() {
	register(Rule{
		ID: "GCP-009", Title: "GKE Sandbox label and taint are GKE's",
		Hint: "Remove the sandbox.gke.io/runtime label or taint: GKE puts it on gVisor nodes itself, and on any other pool it would draw gVisor pods onto nodes without gVisor.",
		check: func(p gcpinputs.PlatformArgs) []Violation {
			var out []Violation
			for _, e := range allPools(p) {
				if _, ok := e.pool.Labels[gcpinputs.GKESandboxKey]; ok {
					out = append(out, v(e.addr, "labels", "sets %s, which GKE applies to gVisor pools itself", gcpinputs.GKESandboxKey))
				}
				for i, t := range e.pool.Taints {
					if t.Key == gcpinputs.GKESandboxKey {
						out = append(out, v(e.addr, fmt.Sprintf("taints[%d]", i), "sets taint %s, which GKE applies to gVisor pools itself", gcpinputs.GKESandboxKey))
					}
				}
				if _, ok := e.pool.Labels[gcpinputs.IsolationKey]; ok {
					out = append(out, v(e.addr, "labels", "sets %s, which Paddock derives from the pool's isolation", gcpinputs.IsolationKey))
				}
			}
			return out
		},
	})
}
