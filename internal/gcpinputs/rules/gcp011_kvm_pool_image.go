package rules

import (
	"github.com/paddock-platform/paddock/internal/gcpinputs"
)

func init() {
	register(Rule{
		ID: "GCP-011", Title: "KVM pool image",
		Hint: `Leave image_type unset (UBUNTU_CONTAINERD) on kvm pools.`,
		check: func(p gcpinputs.PlatformArgs) []Violation {
			var out []Violation
			for _, np := range p.PoolsOf(gcpinputs.IsolationKVM) {
				if np.ImageType != gcpinputs.ImageUbuntuContainerd {
					out = append(out, v(poolAddr(np), "image_type", "kata-deploy cannot install the Kata runtime on %s (a read-only root, noexec writable mounts); kvm pools need %s", np.ImageType, gcpinputs.ImageUbuntuContainerd))
				}
			}
			return out
		},
	})
}
