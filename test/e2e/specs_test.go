//go:build e2e

package e2e

import "fmt"

// sleeperCommand is the sandbox command of the e2e specs: the node's
// busybox, sleeping until told to stop and stopping at once on TERM, so a
// teardown does not wait out a grace period per sandbox.
const sleeperCommand = `["/bin/sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"]`

// sleeperImage is the node's busybox image the e2e specs run.
const sleeperImage = "localhost/paddock/busybox:v1"

// sleeperTemplate is the body most e2e tenants share: template "agent"
// (sleeperCommand under gVisor) and warm pool "agent" of replicas, indented
// to sit inside a tenant block.
func sleeperTemplate(replicas int) string {
	return fmt.Sprintf(`  template "agent" {
    image         = %q
    command       = %s
    runtime_class = "gvisor"
  }

  warm_pool "agent" {
    template = "agent"
    replicas = %d
  }
`, sleeperImage, sleeperCommand, replicas)
}
