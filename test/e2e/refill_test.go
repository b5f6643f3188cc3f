//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddock-platform/paddock/schemas/specgen"
)

// TestRefillShapingReachesController: agent_sandbox's refill_delay and
// refill_per_minute reach the controller that runs the pools. On the local
// stack that controller runs outside the cluster; its supervisor takes the
// refill flags from the Deployment `up` installs, restarts the controller with
// them, and the pinned controller accepts them (it keeps running, the pool
// fills).
func TestRefillShapingReachesController(t *testing.T) {
	e := live
	dir := t.TempDir()
	spec := strings.Replace(specgen.Generate(specgen.Options{Platform: "refill", Tenants: 1}),
		`agent_sandbox {`, "agent_sandbox {\n  refill_delay      = \"2s\"\n  refill_per_minute = 30\n", 1)
	if !strings.Contains(spec, "refill_per_minute") {
		t.Fatalf("the generated spec has no agent_sandbox block to shape:\n%s", spec)
	}
	if err := os.WriteFile(filepath.Join(dir, "platform.hcl"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	e.mustPaddock(t, "up", dir)
	defer e.destroyAndWait(t, nil, nil, dir)

	log := filepath.Join(e.home, "local", "logs", "agent-sandbox-controller.log")
	want := []string{"--sandbox-warm-pool-replenish-delay=2s", "--sandbox-warm-pool-max-refill-rate=0.5"}
	eventually(t, "the controller restarted with the refill flags", 2*time.Minute, func() error {
		b, err := os.ReadFile(log)
		if err != nil {
			return err
		}
		var last string
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "=== ") && strings.Contains(line, ": start ") {
				last = line
			}
		}
		for _, w := range want {
			if !strings.Contains(last, w) {
				return fmt.Errorf("the controller's last start lacks %s: %q", w, last)
			}
		}
		return nil
	})
	// Started with flags it accepts: the platform's warm pool is filled and verify passes.
	eventually(t, "verify passing with the shaped controller", 3*time.Minute, func() error {
		if out, _, err := e.paddock(t, "verify", "--no-probes", dir); err != nil {
			return fmt.Errorf("%v\n%s", err, tail(out, 15))
		}
		return nil
	})
}
