// Status: what is running, what is healthy, and what to do about the rest.

package localcluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// State is a component's condition.
type State string

const (
	Running    State = "running"
	Starting   State = "starting"         // alive, health probe not yet ok
	Waiting    State = "waiting-for-crds" // the controller waits for `paddock up`
	Unhealthy  State = "unhealthy"        // alive, health probe failing
	Crashed    State = "crashed"          // was started, process gone
	NotStarted State = "not started"
)

type componentKind int

const (
	kindControlPlane componentKind = iota
	kindSupervisor
	kindController
	kindNode // a real node's process (containerd, kubelet, cilium-agent, world hosts)
)

// ComponentStatus is one process of the local cluster.
type ComponentStatus struct {
	Name   string `json:"name"`
	State  State  `json:"state"`
	PID    int    `json:"pid,omitempty"`
	Detail string `json:"detail,omitempty"`
	Log    string `json:"log,omitempty"`

	kind componentKind
}

// APIServerStatus is the API server's answer to /readyz.
type APIServerStatus struct {
	URL    string `json:"url,omitempty"`
	Ready  bool   `json:"ready"`
	Detail string `json:"detail,omitempty"`
}

// NodeStatus is one of the cluster's nodes.
type NodeStatus struct {
	Name  string `json:"name"`
	Ready bool   `json:"ready"`
	// Real is true for the node that runs containers (kubelet, containerd,
	// gVisor); false for a kwok node.
	Real bool `json:"real"`
	// Images are the image references a real node holds (the node's
	// status.images names): all a pod can run there, since nothing pulls.
	Images []string `json:"images,omitempty"`
}

// Status is the whole local cluster.
type Status struct {
	Info
	// Exists is false when Dir holds no cluster; the rest is then empty.
	Exists bool `json:"exists"`
	// Complete is false while Up is creating the cluster, and after an Up that
	// failed before finishing (the next Up starts over).
	Complete   bool              `json:"complete"`
	CreatedAt  time.Time         `json:"createdAt,omitzero"`
	APIServer  APIServerStatus   `json:"apiServer"`
	Nodes      []NodeStatus      `json:"nodes,omitempty"`
	Components []ComponentStatus `json:"components"`
	// Retired, when set, says why this paddock cannot run the cluster's real
	// node and what to do (its dataplane, kube-router, is gone).
	Retired string `json:"retired,omitempty"`
}

// Healthy reports whether the cluster exists, its API server is ready and no
// component is crashed, unhealthy or missing. A controller waiting for the Agent
// Sandbox CRDs is healthy: that is the normal state before `paddock up`.
func (s *Status) Healthy() bool {
	return s.Exists && len(s.Problems()) == 0
}

// Problems lists what keeps the cluster from being healthy, one phrase each.
func (s *Status) Problems() []string {
	if !s.Exists {
		return []string{"no local cluster " + strconv.Quote(s.Name) + " in " + s.Dir}
	}
	var p []string
	if s.Retired != "" {
		p = append(p, s.Retired)
	}
	if !s.Complete {
		p = append(p, "creation not finished (an Up is running, or one failed and the next starts over)")
	}
	if !s.APIServer.Ready {
		p = append(p, "API server not ready ("+s.APIServer.Detail+")")
	}
	for _, c := range s.Components {
		switch c.State {
		case Running, Starting, Waiting:
		default:
			d := c.Name + " " + string(c.State)
			if c.Detail != "" {
				d += " (" + c.Detail + ")"
			}
			p = append(p, d)
		}
	}
	for _, n := range s.Nodes {
		if !n.Ready {
			p = append(p, "node "+n.Name+" not Ready")
		}
	}
	return p
}

// component returns the named component's status (zero value if absent).
func (s *Status) component(name string) ComponentStatus {
	for _, c := range s.Components {
		if c.Name == name {
			return c
		}
	}
	return ComponentStatus{}
}

func (c *cluster) Status(ctx context.Context) (*Status, error) {
	if c.err != nil {
		return nil, c.err
	}
	s := &Status{Info: *c.info()}
	st, err := readState(c.dir)
	if errors.Is(err, errNoState) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	c.state = st
	s.Exists, s.Complete = true, st.Phase == phaseUp
	s.CreatedAt = st.CreatedAt
	if st.retiredNode() {
		s.Retired = errRetiredNode(c.name).Error()
	}

	for _, comp := range c.components() {
		ci := c.inspectComponent(comp)
		cs := ComponentStatus{Name: comp.Name, PID: ci.PID, Log: c.componentLog(comp.Name), kind: kindControlPlane}
		switch {
		case ci.Owned:
			cs.State = Running
		case ci.PIDFile:
			cs.State, cs.Detail = Crashed, ci.Reason
		default:
			cs.State, cs.Detail = NotStarted, "no pid file"
		}
		s.Components = append(s.Components, cs)
	}

	// API server and nodes.
	if cs, err := c.clientset(3 * time.Second); err != nil {
		s.APIServer.Detail = err.Error()
	} else {
		if cfg, err := restConfig(c.kubeconfig(), 0); err == nil {
			s.APIServer.URL = cfg.Host
		}
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		if why := apiHealth(rctx, cs); why == "" {
			s.APIServer.Ready = true
			nodes, err := cs.CoreV1().Nodes().List(rctx, metav1.ListOptions{LabelSelector: "paddock.dev/local-cluster=" + c.name})
			if err == nil {
				for i := range nodes.Items {
					n := &nodes.Items[i]
					ns := NodeStatus{Name: n.Name, Ready: nodeReady(n), Real: n.Labels[RealNodeLabel] == "real"}
					if ns.Real {
						for _, img := range n.Status.Images {
							ns.Images = append(ns.Images, img.Names...)
						}
					}
					s.Nodes = append(s.Nodes, ns)
				}
			}
			if len(s.Nodes) == 0 {
				s.Nodes = append(s.Nodes, NodeStatus{Name: nodeName(c.name, 0)})
			}
		} else {
			s.APIServer.Detail = why
		}
		cancel()
	}

	sup, ctl := c.supervisorStatus(ctx, st)
	s.Components = append(s.Components, sup, ctl)
	if st.real() {
		s.Components = append(s.Components, c.nodeComponents(sup.State == Running)...)
	}
	s.Components = append(s.Components, c.obsComponents(st, sup.State == Running)...)
	return s, nil
}

// supervisorStatus reports the supervisor and the controller it runs.
func (c *cluster) supervisorStatus(ctx context.Context, st *clusterState) (ComponentStatus, ComponentStatus) {
	sup := ComponentStatus{Name: "supervisor", Log: filepath.Join(c.logsDir(), supervisorLog), kind: kindSupervisor}
	ctl := ComponentStatus{Name: "agent-sandbox-controller", Log: filepath.Join(c.logsDir(), controllerLog), kind: kindController}
	supAlive := false
	if st.Supervisor == nil {
		sup.State, sup.Detail = NotStarted, "no supervisor recorded"
	} else {
		sup.PID = st.Supervisor.PID
		var why string
		if supAlive, why = st.Supervisor.alive(); supAlive {
			sup.State = Running
		} else {
			sup.State, sup.Detail = Crashed, why+"; `paddock local up` restarts it"
		}
	}
	rep, err := readReport(c.dir)
	if err != nil || (st.Supervisor != nil && rep.Self.PID != st.Supervisor.PID) {
		rep = nil
	}
	ctlAlive := false
	if rep != nil && rep.Controller != nil {
		ctl.PID = rep.Controller.PID
		ctlAlive, _ = rep.Controller.alive()
	}
	switch {
	case !supAlive && ctlAlive:
		ctl.State, ctl.Detail = Running, "orphaned: its supervisor is gone"
	case !supAlive:
		ctl.State, ctl.Detail = NotStarted, "its supervisor is not running"
		if ctl.PID != 0 {
			ctl.State = Crashed
		}
	case rep == nil:
		ctl.State, ctl.Detail = NotStarted, "supervisor starting"
	case rep.Phase == phaseWaiting:
		ctl.State, ctl.PID = Waiting, 0
		if len(rep.MissingCRDs) == len(agentsandbox.CRDs) {
			ctl.Detail = "waits for the Agent Sandbox CRDs (`paddock up` installs them)"
		} else {
			ctl.Detail = "waits for CRDs " + strings.Join(rep.MissingCRDs, ", ")
		}
		if rep.Message != "" {
			ctl.Detail += " (" + rep.Message + ")"
		}
	case rep.Phase == phaseRunning && ctlAlive:
		ctl.State, ctl.Detail = c.probeController(ctx, rep)
		if rep.Release != "" {
			ctl.Detail += "; Agent Sandbox " + rep.Release + " (" + agentsandbox.ControllerBinary(rep.Release) + ")"
		}
	case rep.Phase == phaseBackoff || (rep.Phase == phaseRunning && !ctlAlive):
		ctl.State = Crashed
		ctl.Detail = "exited"
		if rep.LastExit != "" {
			ctl.Detail += " (" + rep.LastExit + ")"
		}
		if !rep.NextStartAt.IsZero() {
			ctl.Detail += fmt.Sprintf("; supervisor restarts it in %s", roundDuration(max(0, time.Until(rep.NextStartAt))))
		} else {
			ctl.Detail += "; supervisor restarts it"
		}
	default:
		ctl.State, ctl.Detail = NotStarted, "supervisor "+rep.Phase
	}
	if rep != nil && rep.Starts > 1 && ctl.State != Waiting {
		ctl.Detail = strings.TrimPrefix(ctl.Detail+fmt.Sprintf("; restarted %d×", rep.Starts-1), "; ")
	}
	return sup, ctl
}

// probeController asks the controller's health probe.
func (c *cluster) probeController(ctx context.Context, rep *supervisorReport) (State, string) {
	base := fmt.Sprintf("http://127.0.0.1:%d", rep.ProbePort)
	for _, path := range []string{"/healthz", "/readyz"} {
		if err := httpOK(ctx, base+path); err != nil {
			if time.Since(rep.Since) < 30*time.Second {
				return Starting, path + ": " + err.Error()
			}
			return Unhealthy, path + ": " + err.Error()
		}
	}
	return Running, fmt.Sprintf("healthy (%s/readyz)", base)
}
