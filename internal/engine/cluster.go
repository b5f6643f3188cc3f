package engine

import (
	"context"
	"errors"

	"github.com/paddock-platform/paddock/internal/converge"
	"github.com/paddock-platform/paddock/internal/model"
)

// liveClients reach the cluster the platform runs on, for the checks an up
// or preview makes beside Pulumi (stored versions, the release change, the
// monitoring CRDs, objects still being deleted, a dead run's leftovers): the
// target's kubeconfig, or on a cluster the stack creates (GKE) the one the
// stack's kubernetes provider recorded at its last up. converge.ErrNoKubeconfig
// before that: the cluster does not exist yet, so nothing lives there.
func (e *Engine) liveClients(ctx context.Context, p *model.Platform) (*converge.Clients, error) {
	c, err := converge.ClientsFor(p)
	if !errors.Is(err, converge.ErrNoKubeconfig) || p.Target.Kind != model.TargetGKE {
		return c, err
	}
	kubeconfig, err := e.stackClusterKubeconfig(ctx, e.stackName(p))
	if err != nil {
		return nil, err
	}
	if kubeconfig == "" {
		return nil, converge.ErrNoKubeconfig
	}
	return converge.ClientsFromKubeconfig(kubeconfig)
}

// stackClusterKubeconfig is the kubeconfig the GKE layer's kubernetes
// provider recorded in stack name's state, decrypted in memory; "" when
// there is none to read: no state yet, no such provider, or a backend whose
// state Paddock does not read (the checks beside Pulumi are then skipped, as
// before the first up).
func (e *Engine) stackClusterKubeconfig(ctx context.Context, name string) (string, error) {
	data, _, err := e.readStackState(name)
	if err != nil || data == nil {
		return "", nil // unreadable or corrupt states are reported by the run itself
	}
	return converge.StackClusterKubeconfig(ctx, data, readPassphrase)
}
