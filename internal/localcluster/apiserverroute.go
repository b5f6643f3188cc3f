// The API server as pods reach it on the real node: the kubernetes Service
// (10.96.0.1:443) leads to the node's address on TCP 443, where the
// supervisor relays each connection to the API server on loopback.
//
// The API server itself listens on loopback only, so neither the network
// nor a pod reaches its port; a pod that must call it (the tenant's egress
// gateway, which watches its namespace's pods and Sandboxes) goes through
// the kubernetes Service, as in any cluster. Its endpoint is the node's
// address on 443, the port GKE's control plane answers on too, so the
// gateway's CiliumNetworkPolicy (kube-apiserver entity, TCP 443) is the same
// on both. The API server runs with --endpoint-reconciler-type=none (it
// would write its loopback address) and the supervisor keeps the Service's
// Endpoints and EndpointSlice instead. Network policy still decides who
// gets there: every tenant pod is default-deny, and only the gateway's
// policy opens the kube-apiserver entity.

package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// APIServerRoutePort is where pods reach the API server: the node's
// address, this port.
const APIServerRoutePort = 443

// apiServerRouteArgs are the API server's flags for the route: none unless
// the cluster has a real node.
func (c *cluster) apiServerRouteArgs() []string {
	if !c.state.real() {
		return nil
	}
	return []string{"--endpoint-reconciler-type=none"}
}

// kubernetesEndpoints are the kubernetes Service's Endpoints and
// EndpointSlice: the node's address on APIServerRoutePort.
func kubernetesEndpoints(nodeIP string) (*corev1.Endpoints, *discoveryv1.EndpointSlice) {
	port := int32(APIServerRoutePort)
	name, proto := "https", corev1.ProtocolTCP
	ready := true
	// skip-mirror: the slice below is the Service's; the mirroring
	// controller must not add a second one from the Endpoints.
	ep := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{"endpointslice.kubernetes.io/skip-mirror": "true"}},
		Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: nodeIP}},
			Ports:     []corev1.EndpointPort{{Name: name, Port: port, Protocol: proto}},
		}},
	}
	es := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{discoveryv1.LabelServiceName: "kubernetes", discoveryv1.LabelManagedBy: "paddock"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{nodeIP}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}},
	}
	return ep, es
}

// ensureKubernetesEndpoints puts the Service's Endpoints and EndpointSlice
// back to what kubernetesEndpoints says; it reports what it changed.
func ensureKubernetesEndpoints(ctx context.Context, cs kubernetes.Interface, nodeIP string) (string, error) {
	wantEP, wantES := kubernetesEndpoints(nodeIP)
	var did []string
	eps := cs.CoreV1().Endpoints(metav1.NamespaceDefault)
	ep, err := eps.Get(ctx, wantEP.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := eps.Create(ctx, wantEP, metav1.CreateOptions{}); err != nil {
			return "", err
		}
		did = append(did, "created")
	case err != nil:
		return "", err
	case !reflect.DeepEqual(ep.Subsets, wantEP.Subsets) || ep.Labels["endpointslice.kubernetes.io/skip-mirror"] != "true":
		ep.Subsets, ep.Labels = wantEP.Subsets, wantEP.Labels
		if _, err := eps.Update(ctx, ep, metav1.UpdateOptions{}); err != nil {
			return "", err
		}
		did = append(did, "updated")
	}
	slices := cs.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault)
	es, err := slices.Get(ctx, wantES.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := slices.Create(ctx, wantES, metav1.CreateOptions{}); err != nil {
			return "", err
		}
		did = append(did, "slice created")
	case err != nil:
		return "", err
	case !reflect.DeepEqual(es.Endpoints, wantES.Endpoints) || !reflect.DeepEqual(es.Ports, wantES.Ports) ||
		es.AddressType != wantES.AddressType || !reflect.DeepEqual(es.Labels, wantES.Labels):
		es.Endpoints, es.Ports, es.Labels = wantES.Endpoints, wantES.Ports, wantES.Labels
		if es.AddressType != wantES.AddressType { // immutable: replace the slice
			if err := slices.Delete(ctx, es.Name, metav1.DeleteOptions{}); err != nil {
				return "", err
			}
			if _, err := slices.Create(ctx, wantES, metav1.CreateOptions{}); err != nil {
				return "", err
			}
		} else if _, err := slices.Update(ctx, es, metav1.UpdateOptions{}); err != nil {
			return "", err
		}
		did = append(did, "slice updated")
	}
	if len(did) == 0 {
		return "", nil
	}
	return fmt.Sprintf("kubernetes Service endpoints %v: %s:%d", did, nodeIP, APIServerRoutePort), nil
}

// keepAPIServerRoute relays the node's address on APIServerRoutePort to the
// API server on loopback and keeps the kubernetes Service pointing there,
// until ctx is done.
func (n *nodeRunner) keepAPIServerRoute(ctx context.Context) {
	nodeIP := n.c.state.NodeNet.NodeIP
	upstream := net.JoinHostPort("127.0.0.1", strconv.Itoa(n.c.state.ControlPlane.APIServer))
	listen := net.JoinHostPort(nodeIP, strconv.Itoa(APIServerRoutePort))
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() { defer wg.Done(); relay(ctx, listen, upstream, n.log.Printf) }()

	cs, err := n.c.clientset(5 * time.Second)
	if err != nil {
		n.log.Printf("node: the kubernetes Service's endpoints not kept: %v", err)
		return
	}
	n.keepEvery(ctx, dnsKeepInterval, "the kubernetes Service's endpoints", func() (string, error) {
		return ensureKubernetesEndpoints(ctx, cs, nodeIP)
	})
}

// relay accepts on listen (retrying until it can bind: the node's bridge
// may not be up yet) and copies each connection to and from upstream, until
// ctx is done. TLS passes through untouched: the API server authenticates
// each client itself.
func relay(ctx context.Context, listen, upstream string, logf func(string, ...any)) {
	var l net.Listener
	for {
		var err error
		if l, err = net.Listen("tcp", listen); err == nil {
			break
		}
		logf("node: API server relay on %s: %v (retrying)", listen, err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
	}
	logf("node: API server relay %s -> %s", listen, upstream)
	go func() { <-ctx.Done(); l.Close() }()
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		go func() {
			defer c.Close()
			u, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", upstream)
			if err != nil {
				return
			}
			defer u.Close()
			done := make(chan struct{}, 2)
			pipe := func(dst, src net.Conn) {
				io.Copy(dst, src)
				if tc, ok := dst.(*net.TCPConn); ok {
					tc.CloseWrite()
				}
				done <- struct{}{}
			}
			go pipe(u, c)
			go pipe(c, u)
			select {
			case <-done:
				<-done
			case <-ctx.Done():
			}
		}()
	}
}
