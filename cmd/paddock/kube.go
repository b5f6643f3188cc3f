package main

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/paddock-platform/paddock/internal/model"
)

// sweepQPS is the client rate limit of drift's sweep: the engine's own
// (converge.ClusterQPS), which the API server's priority and fairness, not
// the client, should bound.
const sweepQPS = 500

// restConfig is how commands that read the cluster reach the platform's
// target: its kubeconfig path and context, with client-go's warnings off.
// qps > 0 raises the client's rate limit for commands that list or watch a
// lot (client-go's default of 5 per second would queue them for seconds).
func restConfig(p *model.Platform, qps float32) (*rest.Config, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: p.Target.Kubeconfig},
		&clientcmd.ConfigOverrides{CurrentContext: p.Target.Context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", p.Target.Kubeconfig, err)
	}
	if qps > 0 {
		cfg.QPS, cfg.Burst = qps, int(2*qps)
	}
	cfg.WarningHandler = rest.NoWarnings{}
	return cfg, nil
}
