package rules

import (
	"github.com/paddock-platform/paddock/internal/gcpinputs"
)

func init() {
	register(Rule{
		ID: "GCP-008", Title: "gVisor pool image",
		Hint: `Leave image_type unset (COS_CONTAINERD) on gVisor pools.`,
		check: func(p gcpinputs.PlatformArgs) []Violation {
			var out []Violation
			for _, np := range p.PoolsOf(gcpinputs.IsolationGVisor) {
				if np.ImageType != gcpinputs.ImageCOSContainerd {
					out = append(out, v(poolAddr(np), "image_type", "GKE Sandbox (gVisor) runs only on %s, not %s", gcpinputs.ImageCOSContainerd, np.ImageType))
				}
			}
			return out
		},
	})
}
