package localcluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Layout of a cluster's Dir. Everything in it is created by Up and removed by Down.
const (
	stateFile       = "state.json"      // written by Up/Down only
	supervisorFile  = "supervisor.json" // written by the supervisor only
	supervisorPID   = "supervisor.pid"  // plain pid, for people and scripts
	kubeconfigFile  = "kubeconfig"
	logsDir         = "logs"
	controlPlaneDir = "controlplane" // pki, pids, etcd's data (see controlplane.go)
	lockFile        = ".lock"
	nodeDir         = "node" // the real node: configs, state, images (see node.go)
	// What paddock before 2026-12 kept there: kwokctl's work dir and a kubectl shim
	// for it. Down still removes them.
	legacyKwokDir = "kwok"
	legacyShimDir = "bin"

	controllerLog = "agent-sandbox-controller.log"
	supervisorLog = "supervisor.log"
	// auditLog is the API server's audit log, under logsDir; its policy
	// (manifests.AuditPolicyFile) is under controlPlaneDir.
	auditLog = "audit.log"
)

// stateVersion guards against reading a state file written by an incompatible
// paddock; bump it when the layout changes meaning.
const stateVersion = 1

// clusterState is Dir/state.json: what Up decided and started.
type clusterState struct {
	Version   int       `json:"version"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"createdAt"`
	// Phase is phaseCreating until Up finished, then phaseUp.
	Phase string `json:"phase"`
	// Binaries are the resolved tool paths the cluster was started with.
	Binaries map[string]string `json:"binaries"`
	// ControllerMetricsPort and ControllerProbePort are the ports chosen at Up for
	// the Agent Sandbox controller (the supervisor picks new ones if they were taken
	// meanwhile and reports what it used in supervisor.json).
	ControllerMetricsPort int `json:"controllerMetricsPort"`
	ControllerProbePort   int `json:"controllerProbePort"`
	// ControlPlane are the loopback ports of the control plane (zero in a state
	// written when kwokctl ran it: such a cluster is started over).
	ControlPlane controlPlanePorts `json:"controlPlane"`
	// Supervisor is the detached supervisor process Up started.
	Supervisor *procRecord `json:"supervisor,omitempty"`
	// Nodes is NodesReal or NodesFake ("" in state written before real nodes: fake).
	Nodes string `json:"nodes,omitempty"`
	// NodeNet is the real node's network (bridge, subnet, node IP).
	NodeNet nodeNet `json:"nodeNet,omitzero"`
	// Observability, when set, has the supervisor run kube-state-metrics and
	// Prometheus on these loopback ports (observability.go).
	Observability *obsPorts `json:"observability,omitempty"`
}

// real reports whether the cluster runs a real node.
func (s *clusterState) real() bool { return s != nil && s.Nodes == NodesReal }

// Cluster phases, as written to state.json.
const (
	phaseCreating = "creating"
	phaseUp       = "up"
)

// Supervisor phases, as written to supervisor.json.
const (
	phaseWaiting  = "waiting-for-crds"
	phaseRunning  = "running"
	phaseBackoff  = "backoff"
	phaseStopping = "stopping"
	phaseStopped  = "stopped"
)

// supervisorReport is Dir/supervisor.json, rewritten by the supervisor whenever
// something changes.
type supervisorReport struct {
	Self        procRecord  `json:"self"`
	Phase       string      `json:"phase"`
	Since       time.Time   `json:"since"`
	MissingCRDs []string    `json:"missingCRDs,omitempty"`
	Controller  *procRecord `json:"controller,omitempty"`
	// Release is the Agent Sandbox release whose controller build runs (the
	// installed Deployment's version label; empty: the pinned build).
	Release     string    `json:"release,omitempty"`
	MetricsPort int       `json:"metricsPort,omitempty"`
	ProbePort   int       `json:"probePort,omitempty"`
	Starts      int       `json:"starts"`
	LastExit    string    `json:"lastExit,omitempty"`
	LastExitAt  time.Time `json:"lastExitAt,omitzero"`
	NextStartAt time.Time `json:"nextStartAt,omitzero"`
	Message     string    `json:"message,omitempty"`
}

// writeJSON writes v to path atomically, owner-only.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(b, '\n'), 0o600)
}

// writeFileAtomic writes b to path with mode through a temporary file and a
// rename, so a reader (the supervisor, Prometheus) never sees half a file.
func writeFileAtomic(path string, b []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	fail := func(err error) error {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		return fail(err)
	}
	if err := tmp.Chmod(mode); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// errNoState means Dir holds no cluster.
var errNoState = errors.New("no local cluster state")

func readState(dir string) (*clusterState, error) {
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, errNoState
		}
		return nil, err
	}
	var s clusterState
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, stateFile), err)
	}
	if s.Version != stateVersion {
		return nil, fmt.Errorf("%s was written by an incompatible paddock (state version %d, want %d); stop it with that paddock or remove the directory",
			filepath.Join(dir, stateFile), s.Version, stateVersion)
	}
	return &s, nil
}

func writeState(dir string, s *clusterState) error {
	s.Version = stateVersion
	return writeJSON(filepath.Join(dir, stateFile), s)
}

func readReport(dir string) (*supervisorReport, error) {
	b, err := os.ReadFile(filepath.Join(dir, supervisorFile))
	if err != nil {
		return nil, err
	}
	var r supervisorReport
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, supervisorFile), err)
	}
	return &r, nil
}
