package converge

import (
	"errors"
	"fmt"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/paddock-platform/paddock/internal/model"
)

// Clients reach the platform's cluster directly, for what the engine
// does beside Pulumi: waiting for objects still being deleted, and deleting
// what a dead run left.
type Clients struct {
	Kube kubernetes.Interface
	Dyn  dynamic.Interface
	// Meta lists objects' metadata only (drift's S05 sweep, the prune
	// after a dead run); nil in clients built on fakes (newClients).
	Meta   metadata.Interface
	Disco  discovery.DiscoveryInterface
	Mapper *restmapper.DeferredDiscoveryRESTMapper
}

// ErrNoKubeconfig: the platform's cluster is only known to its program (a
// GKE cluster it creates), so nothing can be done on it beside Pulumi.
var ErrNoKubeconfig = errors.New("the platform's target has no kubeconfig")

// ClusterQPS is the client rate limit of every request the engine makes
// (the fast comparison, direct destroy, prune, waits), and of the kubernetes
// provider's inside Pulumi (the engine's workspace sets it): they touch every
// object of a platform, and client-go's default of 5 requests a second (the
// provider's 50) would queue them for minutes. Overload is the API server's
// to refuse, through its priority and fairness.
const ClusterQPS = 500

// restConfigFor is the one place the engine reads p's target for its own
// clients: the kubeconfig and context the target was resolved to
// (targets.Resolve), with ClusterQPS.
func restConfigFor(p *model.Platform) (*rest.Config, error) {
	if p.Target.Kubeconfig == "" {
		return nil, ErrNoKubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: p.Target.Kubeconfig},
		&clientcmd.ConfigOverrides{CurrentContext: p.Target.Context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", p.Target.Kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = ClusterQPS, 2*ClusterQPS
	cfg.WarningHandler = rest.NoWarnings{}
	return cfg, nil
}

// ClientsFromKubeconfig builds clients from a kubeconfig held in memory
// (the one a stack's kubernetes provider recorded: Plan.Kubeconfig). An exec
// credential plugin it names, such as gke-gcloud-auth-plugin, runs as
// kubectl would run it.
func ClientsFromKubeconfig(kubeconfig string) (*Clients, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(kubeconfig))
	if err != nil {
		// The error may quote the kubeconfig: only say that it failed.
		return nil, errors.New("the kubeconfig the stack recorded does not load")
	}
	cfg.QPS, cfg.Burst = ClusterQPS, 2*ClusterQPS
	cfg.WarningHandler = rest.NoWarnings{}
	return clientsFromConfig(cfg)
}

// ClientsFor builds clients for p's target (restConfigFor).
func ClientsFor(p *model.Platform) (*Clients, error) {
	cfg, err := restConfigFor(p)
	if err != nil {
		return nil, err
	}
	return clientsFromConfig(cfg)
}

func clientsFromConfig(cfg *rest.Config) (*Clients, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	c := newClients(kube, dyn)
	c.Meta = meta
	return c, nil
}

// newClients are the clients of kube and dyn, with a discovery-backed REST
// mapper.
func newClients(kube kubernetes.Interface, dyn dynamic.Interface) *Clients {
	disco := kube.Discovery()
	return &Clients{Kube: kube, Dyn: dyn, Disco: disco,
		Mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))}
}
