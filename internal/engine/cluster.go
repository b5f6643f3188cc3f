package engine

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/paddock-platform/paddock/internal/model"
)

// clusterClients reach the platform's cluster directly, for what the engine
// does beside Pulumi: waiting for objects still being deleted, and deleting
// what a dead run left.
type clusterClients struct {
	kube   kubernetes.Interface
	dyn    dynamic.Interface
	disco  discovery.DiscoveryInterface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

// errNoKubeconfig: the platform's cluster is only known to its program (a
// GKE cluster it creates), so nothing can be done on it beside Pulumi.
var errNoKubeconfig = errors.New("the platform's target has no kubeconfig")

// clusterQPS is the client rate limit of every request the engine makes
// beside Pulumi (the fast comparison, direct destroy, prune, waits): they
// touch every object of a platform, and client-go's default of 5 requests a
// second would queue them for minutes.
const clusterQPS = 500

// restConfigFor is the one place the engine reads p's target for its own
// clients: the kubeconfig and context the target was resolved to
// (targets.Resolve), with clusterQPS.
func restConfigFor(p *model.Platform) (*rest.Config, error) {
	if p.Target.Kubeconfig == "" {
		return nil, errNoKubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: p.Target.Kubeconfig},
		&clientcmd.ConfigOverrides{CurrentContext: p.Target.Context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", p.Target.Kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = clusterQPS, 2*clusterQPS
	cfg.WarningHandler = rest.NoWarnings{}
	return cfg, nil
}

// clientsFromKubeconfig builds clients from a kubeconfig held in memory
// (the one a stack's kubernetes provider recorded: stackClusterPlan). An exec
// credential plugin it names, such as gke-gcloud-auth-plugin, runs as
// kubectl would run it.
func clientsFromKubeconfig(kubeconfig string) (*clusterClients, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(kubeconfig))
	if err != nil {
		// The error may quote the kubeconfig: only say that it failed.
		return nil, errors.New("the kubeconfig the stack recorded does not load")
	}
	cfg.QPS, cfg.Burst = clusterQPS, 2*clusterQPS
	cfg.WarningHandler = rest.NoWarnings{}
	return clientsFromConfig(cfg)
}

// clientsFor builds clients for p's target (restConfigFor).
func clientsFor(p *model.Platform) (*clusterClients, error) {
	cfg, err := restConfigFor(p)
	if err != nil {
		return nil, err
	}
	return clientsFromConfig(cfg)
}

func clientsFromConfig(cfg *rest.Config) (*clusterClients, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return newClusterClients(kube, dyn), nil
}

func newClusterClients(kube kubernetes.Interface, dyn dynamic.Interface) *clusterClients {
	disco := kube.Discovery()
	return &clusterClients{kube: kube, dyn: dyn, disco: disco,
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))}
}

// liveClients reach the cluster the platform runs on, for the checks an up
// or preview makes beside Pulumi (stored versions, the release change, the
// monitoring CRDs, objects still being deleted, a dead run's leftovers): the
// target's kubeconfig, or on a cluster the stack creates (GKE) the one the
// stack's kubernetes provider recorded at its last up. errNoKubeconfig
// before that: the cluster does not exist yet, so nothing lives there.
func (e *Engine) liveClients(ctx context.Context, p *model.Platform) (*clusterClients, error) {
	c, err := clientsFor(p)
	if !errors.Is(err, errNoKubeconfig) || p.Target.Kind != model.TargetGKE {
		return c, err
	}
	kubeconfig, err := e.stackClusterKubeconfig(ctx, e.stackName(p))
	if err != nil {
		return nil, err
	}
	if kubeconfig == "" {
		return nil, errNoKubeconfig
	}
	return clientsFromKubeconfig(kubeconfig)
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
	cp, err := parseFullCheckpoint(data)
	if err != nil || cp.Checkpoint.Latest == nil {
		return "", nil
	}
	latest := cp.Checkpoint.Latest
	for i := range latest.Resources {
		r := &latest.Resources[i]
		if r.Type != "pulumi:providers:kubernetes" || !cloudLayerURN(r.URN) {
			continue
		}
		kubeconfig, err := recordedKubeconfig(ctx, r, stateCrypter(ctx, latest.SecretsProviders))
		if err != nil {
			if errors.Is(err, errNoRecordedKubeconfig) {
				return "", nil
			}
			return "", fmt.Errorf("reading the kubeconfig of the stack's GKE cluster from its state: %w", err)
		}
		return kubeconfig, nil
	}
	return "", nil
}
