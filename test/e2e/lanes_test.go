//go:build e2e

package e2e

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// A lane is one cluster of the suite and the tests that run on it, one after
// another. The two lanes run at the same time, each in its own go test
// process with its own PADDOCK_HOME and cluster (run-lanes.sh), so no test
// of one lane can see the other's objects, release, components or faults;
// within a lane every test runs alone, as the whole suite did on one
// cluster. README.md says why each test is in its lane.
type lane string

const (
	// laneNode is the cluster with the machine's one real node: sandboxes
	// start under gVisor, Cilium enforces the network policies, verify's
	// runtime checks look from inside. Every test that asserts what a
	// sandbox can do, or what the dataplane lets through, runs here.
	laneNode lane = "node"
	// laneControl is a cluster of kwok nodes beside it: the same API server,
	// etcd, controller-manager, scheduler and Agent Sandbox controller, with
	// kwok in the kubelet's place. Its tests judge what the control plane and
	// the runners do (state, locks, faults, drift, admission, lifetimes) and
	// assert nothing a container would have to show.
	laneControl lane = "control"
)

// laneEnv picks one lane for this process: `node` or `control` runs that
// lane's tests (and only those) on its kind of cluster; unset runs every
// test on one cluster of PADDOCK_E2E_NODES's kind, one after another, as
// when debugging a single test with -run.
const laneEnv = "PADDOCK_E2E_LANE"

// laneOf places every test of the package; a test missing here fails the
// run at its start (checkLanes), so a new test's author chooses.
var laneOf = map[string]lane{
	// The real node: runtime, dataplane, and what a warm sandbox shows.
	"TestAlertsFireLive":                laneNode, // cordons the real node; alerts on its pods
	"TestDrift":                         laneNode, // swaps the controller image under running pools
	"TestEgressGatewayHoldsTheKey":      laneNode, // traffic from a sandbox through the gateway
	"TestLocalImageRefused":             laneNode, // the node's own images decide what is refused
	"TestLocalPlatform":                 laneNode, // examples/local end to end, verify's runtime checks
	"TestNamedEgressEnforced":           laneNode, // the dataplane allows and refuses
	"TestPoolRollout":                   laneNode, // execs into the rolled sandboxes
	"TestReleaseUpgradeAndRollback":     laneNode, // a session keeps running across the upgrade
	"TestRuntimeClassSwapRepaired":      laneNode, // sandboxes meant for gVisor on the host kernel
	"TestSessionLifetimeAfterAdmission": laneNode, // running sessions past their end
	"TestTamperingCaughtByVerify":       laneNode, // verify --strict, runtime checks included
	"TestWeakeningsRepaired":            laneNode, // examples/local stack, beside TestTampering's
	// The control plane: runners, state, faults, drift and admission.
	"TestAdmissionWebhook":                       laneControl,
	"TestCiliumFQDNPolicyAcceptedByCiliumSchema": laneControl, // Cilium's CRD schema only
	"TestClaimMaxTTLEnforced":                    laneControl,
	"TestDriftFleet":                             laneControl,
	"TestDriftStacks":                            laneControl,
	"TestFaultAPIServerStopped":                  laneControl,
	"TestFaultControllerKilled":                  laneControl,
	"TestFaultCorruptAndLockedState":             laneControl,
	"TestFaultKillDestroy":                       laneControl,
	"TestFaultKillUp":                            laneControl,
	"TestFaultKillUpEveryStep":                   laneControl,
	"TestInit":                                   laneControl,
	"TestRefillShapingReachesController":         laneControl,
	"TestSharedBackendTwoRunners":                laneControl,
	"TestSharedBucketTwoRunners":                 laneControl,
	"TestStoredVersionPreflight":                 laneControl,
}

// selectedLane is laneEnv's lane, "" for every test on one cluster.
func selectedLane() (lane, error) {
	switch l := lane(os.Getenv(laneEnv)); l {
	case "", laneNode, laneControl:
		return l, nil
	default:
		return "", fmt.Errorf("%s=%q: use %q, %q, or leave it unset to run every test on one cluster", laneEnv, l, laneNode, laneControl)
	}
}

// laneNodes is the node kind of the lane's cluster: kwok for the control
// lane whatever PADDOCK_E2E_NODES says; otherwise that variable (real by
// default, fake on a machine that cannot run a sandbox).
func laneNodes(l lane) string {
	if l == laneControl {
		return "fake"
	}
	if n := os.Getenv("PADDOCK_E2E_NODES"); n != "" {
		return n
	}
	return "real"
}

// checkLanes reads the package's test files and fails when a test has no
// lane or the table names a test that does not exist.
func checkLanes(dir string) error {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no test files in %s (%v)", dir, err)
	}
	found := map[string]bool{}
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") && fn.Name.Name != "TestMain" {
				found[fn.Name.Name] = true
			}
		}
	}
	var problems []string
	for name := range found {
		if _, ok := laneOf[name]; !ok {
			problems = append(problems, name+" has no lane: add it to laneOf in lanes_test.go (README.md says how to choose)")
		}
	}
	for name := range laneOf {
		if !found[name] {
			problems = append(problems, "laneOf names "+name+", which is no test of the package: remove it")
		}
	}
	sort.Strings(problems)
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "\n"))
	}
	return nil
}

// restrictToLane makes go test run only l's tests. A -run given as well is
// refused: the lane already chooses, and a test outside it would silently
// not run.
func restrictToLane(l lane) (int, error) {
	if !flag.Parsed() {
		flag.Parse()
	}
	run := flag.Lookup("test.run")
	if run == nil {
		return 0, fmt.Errorf("go test's -run flag is not registered")
	}
	if run.Value.String() != "" {
		return 0, fmt.Errorf("%s=%s and -run %q: pick tests with -run (leave %s unset) or a lane, not both", laneEnv, l, run.Value.String(), laneEnv)
	}
	var names []string
	for name, in := range laneOf {
		if in == l {
			names = append(names, regexp.QuoteMeta(name))
		}
	}
	sort.Strings(names)
	return len(names), run.Value.Set("^(" + strings.Join(names, "|") + ")$")
}
