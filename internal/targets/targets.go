// Package targets resolves a loaded platform's target to the cluster the
// engine reaches: the local cluster's kubeconfig (asking it whether it runs),
// an existing kubeconfig, or nothing for GKE, whose cluster the program
// creates in the same run.
package targets

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/paddock-platform/paddock/internal/localcluster"
	"github.com/paddock-platform/paddock/internal/model"
)

// Resolve fills the kubeconfig the engine uses for the platform's
// target, and fails early with what to do when the target cannot be reached.
func Resolve(ctx context.Context, p *model.Platform) error {
	switch p.Target.Kind {
	case model.TargetLocal:
		lc := localcluster.New(localcluster.Options{})
		st, err := lc.Status(ctx)
		// A busy API server can miss the status probe's short deadline: ask again.
		for try := 0; err == nil && st.Exists && !st.APIServer.Ready && try < 3; try++ {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(2 * time.Second):
			}
			st, err = lc.Status(ctx)
		}
		if err != nil {
			return err
		}
		if !st.Exists {
			return errors.New("the local cluster is not running: start it with `paddock local up` (see `paddock local status`)")
		}
		if !st.APIServer.Ready {
			return fmt.Errorf("the local cluster's API server is not ready (%s): see `paddock local status`, or restart it with `paddock local down && paddock local up`", st.APIServer.Detail)
		}
		p.Target.Kubeconfig = st.Kubeconfig
		if p.Target.Context == "" {
			p.Target.Context = st.Context
		}
	case model.TargetKubeconfig:
		if p.Target.Kubeconfig == "" {
			if env := os.Getenv("KUBECONFIG"); env != "" {
				p.Target.Kubeconfig = strings.Split(env, string(os.PathListSeparator))[0]
			} else if h, err := os.UserHomeDir(); err == nil {
				p.Target.Kubeconfig = filepath.Join(h, ".kube", "config")
			}
		}
		if strings.HasPrefix(p.Target.Kubeconfig, "~/") {
			if h, err := os.UserHomeDir(); err == nil {
				p.Target.Kubeconfig = filepath.Join(h, p.Target.Kubeconfig[2:])
			}
		}
		if abs, err := filepath.Abs(p.Target.Kubeconfig); err == nil {
			p.Target.Kubeconfig = abs
		}
		if _, err := os.Stat(p.Target.Kubeconfig); err != nil {
			return fmt.Errorf("target kubeconfig %s: %w", p.Target.Kubeconfig, err)
		}
	case model.TargetGKE:
		// Nothing to resolve: the program creates the cluster and reaches it
		// through the kubernetes provider made from the cluster's outputs, in
		// the same run. Google credentials are the gcp provider's (Application
		// Default Credentials), never part of the spec.
	default:
		return fmt.Errorf("target %q cannot be provisioned by this build", p.Target.Kind)
	}
	return nil
}
