package localcluster

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestStateRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if _, err := readState(dir); err != errNoState {
		t.Fatalf("empty dir: got %v, want errNoState", err)
	}
	in := &clusterState{
		Name:                  "paddock",
		CreatedAt:             time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC),
		Phase:                 phaseUp,
		Binaries:              map[string]string{"kube-apiserver": "/b/kube-apiserver", "etcd": "/b/etcd"},
		ControllerMetricsPort: 40001,
		ControllerProbePort:   40002,
		Supervisor:            &procRecord{PID: 123, StartTime: 456, Exe: "/b/paddock"},
		ControlPlane:          controlPlanePorts{Etcd: 32765, EtcdPeer: 32766, APIServer: 32764, ControllerManager: 32763, Scheduler: 32762},
	}
	if err := writeState(dir, in); err != nil {
		t.Fatal(err)
	}
	out, err := readState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip:\n in  %+v\n out %+v", in, out)
	}
	if out.Version != stateVersion {
		t.Errorf("version %d", out.Version)
	}
	// No temp files left behind by the atomic write.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("dir holds %d entries, want only %s", len(entries), stateFile)
	}
}

func TestStateVersionMismatch(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, stateFile), []byte(`{"version": 99, "name": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readState(dir); err == nil || !strings.Contains(err.Error(), "incompatible") {
		t.Fatalf("got %v", err)
	}
}

func TestReportRoundTrip(t *testing.T) {
	dir := t.TempDir()
	in := supervisorReport{
		Self:        procRecord{PID: 1, StartTime: 2, Exe: "/x"},
		Phase:       phaseBackoff,
		Since:       time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC),
		MissingCRDs: []string{"a"},
		Controller:  &procRecord{PID: 3, StartTime: 4, Exe: "/y"},
		MetricsPort: 5, ProbePort: 6, Starts: 2,
		LastExit: "signal: killed", LastExitAt: time.Date(2026, 11, 29, 7, 1, 0, 0, time.UTC),
	}
	if err := writeJSON(filepath.Join(dir, supervisorFile), &in); err != nil {
		t.Fatal(err)
	}
	out, err := readReport(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&in, out) {
		t.Errorf("round trip:\n in  %+v\n out %+v", in, out)
	}
}

func TestControllerArgs(t *testing.T) {
	got := strings.Join(controllerArgs("/d/kubeconfig", 1001, 1002), " ")
	want := "--kubeconfig /d/kubeconfig --extensions --leader-elect=false --enable-webhook=false --manage-webhook-certs=false " +
		"--metrics-bind-address=127.0.0.1:1001 --health-probe-bind-address=127.0.0.1:1002"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestFakeNode(t *testing.T) {
	n := fakeNode("paddock", 0)
	if n.Name != "paddock-gvisor-0" {
		t.Errorf("name %q", n.Name)
	}
	if n.Annotations["kwok.x-k8s.io/node"] != "fake" {
		t.Error("not a kwok fake node")
	}
	if n.Labels["sandbox.gke.io/runtime"] != "gvisor" || n.Labels["kubernetes.io/os"] != "linux" {
		t.Errorf("labels %v", n.Labels)
	}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "sandbox.gke.io/runtime" || n.Spec.Taints[0].Value != "gvisor" || n.Spec.Taints[0].Effect != "NoSchedule" {
		t.Errorf("taints %v", n.Spec.Taints)
	}
	for res, want := range map[string]string{"cpu": "32", "memory": "128Gi", "pods": "110", "ephemeral-storage": "500Gi"} {
		q := n.Status.Allocatable[corev1ResourceName(res)]
		if q.String() != want {
			t.Errorf("allocatable %s = %s, want %s", res, q.String(), want)
		}
	}
}

func TestStatusHealthy(t *testing.T) {
	s := &Status{Info: Info{Name: "p", Dir: "/d"}}
	if s.Healthy() || !strings.Contains(strings.Join(s.Problems(), ""), "no local cluster") {
		t.Errorf("missing cluster: healthy=%v problems=%v", s.Healthy(), s.Problems())
	}
	s.Exists, s.Complete = true, true
	s.APIServer.Ready = true
	s.Components = []ComponentStatus{
		{Name: "kube-apiserver", State: Running},
		{Name: "supervisor", State: Running},
		{Name: "agent-sandbox-controller", State: Waiting},
	}
	if !s.Healthy() {
		t.Errorf("waiting controller should be healthy: %v", s.Problems())
	}
	s.Components[0].State, s.Components[0].Detail = Crashed, "pid 9 is not running"
	if s.Healthy() || !strings.Contains(strings.Join(s.Problems(), ""), "kube-apiserver crashed (pid 9 is not running)") {
		t.Errorf("crashed: problems %v", s.Problems())
	}
}

func TestNewDefaultsAndValidation(t *testing.T) {
	t.Setenv("PADDOCK_HOME", "/tmp/ph")
	c := New(Options{}).(*cluster)
	if c.name != "paddock" || c.dir != "/tmp/ph/local" || c.err != nil {
		t.Errorf("defaults: %q %q %v", c.name, c.dir, c.err)
	}
	if c.info().Context != "paddock" || c.info().Kubeconfig != "/tmp/ph/local/kubeconfig" {
		t.Errorf("info %+v", c.info())
	}
	for _, bad := range []string{"Paddock", "-x", "a_b", strings.Repeat("a", 41)} {
		if New(Options{Name: bad}).(*cluster).err == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
}

func TestDownWithoutCluster(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "none")
	c := New(Options{Name: "unit", Dir: dir})
	if err := c.Down(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "keep-me"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.Down(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "keep-me")); err != nil {
		t.Error("Down removed a file it did not create")
	}
	s, err := c.Status(t.Context())
	if err != nil || s.Exists {
		t.Errorf("status of nothing: %+v %v", s, err)
	}
}

func corev1ResourceName(s string) corev1.ResourceName { return corev1.ResourceName(s) }

// A cluster whose real node ran kube-router (state naming that dataplane, or
// none) is only taken down: Up and the supervisor refuse it and Status says
// what to do, each naming `paddock local down`.
func TestRetiredNode(t *testing.T) {
	home := t.TempDir()
	t.Setenv("PADDOCK_HOME", home)
	if err := os.MkdirAll(filepath.Join(home, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range controlPlaneTools {
		if err := os.WriteFile(filepath.Join(home, "bin", tool), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, dataplane := range []string{"", "kube-router"} {
		dir := t.TempDir()
		c := New(Options{Name: "old", Dir: dir}).(*cluster)
		nn := planNodeNet("old")
		nn.Dataplane = dataplane
		st := &clusterState{Name: "old", Phase: phaseUp, Nodes: NodesReal, NodeNet: nn, Binaries: map[string]string{},
			ControlPlane: controlPlanePorts{Etcd: 31001, EtcdPeer: 31002, APIServer: 31003, ControllerManager: 31004, Scheduler: 31005}}
		if err := writeState(dir, st); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(c.pki(pkiCA, ".crt")), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(c.pki(pkiCA, ".crt"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Up(context.Background()); err == nil || !strings.Contains(err.Error(), "`paddock local down`") {
			t.Errorf("dataplane %q: Up = %v, want a refusal naming `paddock local down`", dataplane, err)
		}
		s, err := c.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if s.Healthy() || !strings.Contains(s.Retired, "`paddock local down`") || len(s.Problems()) == 0 || s.Problems()[0] != s.Retired {
			t.Errorf("dataplane %q: status retired %q, problems %q", dataplane, s.Retired, s.Problems())
		}
		if err := Supervise(context.Background(), dir); err == nil || !strings.Contains(err.Error(), "`paddock local down`") {
			t.Errorf("dataplane %q: Supervise = %v", dataplane, err)
		}
	}
	// A Cilium node is not retired, nor is a kwok one.
	if (&clusterState{Nodes: NodesReal, NodeNet: planNodeNet("x")}).retiredNode() || (&clusterState{}).retiredNode() {
		t.Error("retiredNode on a Cilium or kwok cluster")
	}
}
