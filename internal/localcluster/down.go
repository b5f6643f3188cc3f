// Down: stop everything the local cluster started and remove what it owns.

package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

func (c *cluster) Down(ctx context.Context) error {
	if c.err != nil {
		return c.err
	}
	if _, err := os.Stat(c.dir); errors.Is(err, os.ErrNotExist) {
		c.progress("no local cluster %q in %s; nothing to do", c.name, c.dir)
		return nil
	}
	unlock, err := c.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	st, err := readState(c.dir)
	switch {
	case err == nil:
		if st.Name != c.name {
			return fmt.Errorf("%s holds local cluster %q, not %q", c.dir, st.Name, c.name)
		}
		c.state = st
	case errors.Is(err, errNoState):
		if !c.hasLeftovers() {
			c.progress("no local cluster %q in %s; nothing to do", c.name, c.dir)
			c.removeOwned()
			return nil
		}
	default:
		return err
	}
	start := time.Now()
	if err := c.teardown(ctx); err != nil {
		return err
	}
	c.progress("local cluster %q removed (%s)", c.name, roundDuration(time.Since(start)))
	return nil
}

// teardown stops everything and removes the state. The caller holds the lock.
func (c *cluster) teardown(ctx context.Context) error {
	done := c.step("stopping the Agent Sandbox controller and its supervisor")
	c.stopSupervisor()
	done(nil)

	if c.state.real() || fileExists(filepath.Join(c.dir, nodeDir)) {
		done = c.step("removing the real node from the machine (processes, mounts, iptables, ipsets, cgroups, bridge, sysctls)")
		err := c.cleanupHost(c.nodeDirs())
		done(err)
		if err != nil {
			return fmt.Errorf("%w\n  run `paddock local down` again once the cause is fixed", err)
		}
	}

	done = c.step("stopping the control plane")
	err := c.stopComponents()
	if err == nil {
		err = c.stopLegacyControlPlane()
	}
	done(err)
	if err != nil {
		return err
	}
	c.removeOwned()
	return nil
}

// removeOwned deletes what Up creates in Dir, then Dir itself if that left it
// empty. Files Paddock did not create are left alone.
func (c *cluster) removeOwned() {
	for _, p := range []string{stateFile, supervisorFile, supervisorPID, nodeReportFile, obsReportFile, obsDir, kubeconfigFile, logsDir, controlPlaneDir, legacyKwokDir, legacyShimDir, lockFile} {
		_ = os.RemoveAll(filepath.Join(c.dir, p))
	}
	_ = os.Remove(c.dir) // only succeeds when empty
}
