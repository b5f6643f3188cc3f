package localcluster

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// startRealNode writes the node's files, prepares the host, starts the supervisor
// (which runs containerd, kubelet and the Cilium agent) and waits until the
// kubelet's node is Ready and schedulable.
func (c *cluster) startRealNode(ctx context.Context, cs kubernetes.Interface) error {
	start := time.Now()
	done := c.step("writing the real node's configuration and images (busybox-static)")
	err := c.writeNodeFiles()
	done(err)
	if err != nil {
		return err
	}
	nn := c.state.NodeNet
	done = c.step("preparing the host: bridge %s (%s, node IP %s), cgroup %s", nn.Bridge, nn.Subnet, nn.NodeIP, cgroupRoot(c.name))
	err = c.prepareHost(c.nodeDirs(), nn)
	done(err)
	if err != nil {
		return err
	}
	if err := c.ensureSupervisor(ctx); err != nil {
		return err
	}
	name := nodeName(c.name, 0)
	wctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	for {
		n, err := cs.CoreV1().Nodes().Get(wctx, name, metav1.GetOptions{})
		if err == nil && n.Labels["app.kubernetes.io/managed-by"] != "paddock" {
			n.Labels["app.kubernetes.io/managed-by"] = "paddock"
			n, err = cs.CoreV1().Nodes().Update(wctx, n, metav1.UpdateOptions{FieldManager: "paddock"})
		}
		if err == nil && nodeSchedulable(n) {
			c.progress("node %s ready %s (kubelet %s, containerd, gVisor runsc; runtime handlers runc, gvisor)", name, roundDuration(time.Since(start)), n.Status.NodeInfo.KubeletVersion)
			return c.ensureClusterDNS(ctx, cs)
		}
		select {
		case <-wctx.Done():
			return fmt.Errorf("node %s did not become Ready and schedulable within %s; see %s, %s and %s",
				name, c.timeout, c.logsDir()+"/kubelet.log", c.logsDir()+"/containerd.log", c.logsDir()+"/supervisor.log")
		case <-time.After(250 * time.Millisecond):
		}
	}
}
