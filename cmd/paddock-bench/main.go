// Command paddock-bench is `make bench`: it starts its own local cluster in a
// throwaway PADDOCK_HOME (so it never touches the platforms of yours), then
// measures provisioning (paddock, kubectl, the parallel SSA floor), validate
// on generated specs, `paddock drift --all` over projects of N stacks
// (-fleet), sandbox start through claims and the egress gateway's
// throughput against a direct connection (-gateway), and writes
// internal/bench/results/{results.json,README.md,provision.png}.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/paddock-platform/paddock/internal/bench"
	"github.com/paddock-platform/paddock/internal/localcluster"
	"github.com/paddock-platform/paddock/internal/paths"
	"github.com/paddock-platform/paddock/internal/pgtest"
	"github.com/paddock-platform/paddock/internal/pins"
	"github.com/paddock-platform/paddock/internal/s3test"
	"github.com/paddock-platform/paddock/schemas/specgen"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "paddock-bench:", err)
		os.Exit(1)
	}
}

func intList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, n)
	}
	sort.Ints(out)
	return out, nil
}

func run() error {
	var (
		paddock   = flag.String("paddock", "bin/paddock", "the paddock binary to measure")
		outDir    = flag.String("out", "internal/bench/results", "where the results go")
		tenants   = flag.String("tenants", "1,10,50,100", "tenant counts of the provisioning benchmark")
		everyMax  = flag.Int("every-step-max", 10, "largest tenant count paddock is also measured at with --checkpoints every-step, the default's opt-out (their cost is quadratic); 0 = all")
		fullMax   = flag.Int("full-max", 0, "largest tenant count the no-op `up --full` (Pulumi's refresh and update, for contrast) is measured at; 0 = all")
		baseline  = flag.String("baseline", "", "results.json whose own measurements are the report's \"before\" (default: the baseline the results in -out carry, else those results themselves)")
		lines     = flag.String("validate-lines", "100,1000,5000,10000", "spec sizes of the validate benchmark")
		claims    = flag.Int("claims", 10, "claims per sequential mode of the claims benchmark (and the fewest its burst mode measures)")
		poolSize  = flag.Int("pool", 3, "warm pool replicas of the claims benchmark; 0 sizes it for the node: one fewer than the sandboxes of the template the node and the tenant's quota hold, found from a first pool of 1")
		burst     = flag.Int("burst", 0, "claims the claims benchmark's burst mode makes at once (0: twice the pool); a burst's claims not Ready within -claims-timeout are counted, not a failure")
		claimMode = flag.String("claims-modes", "", "modes of the claims benchmark, of warm, cold and burst (empty: all three); the other modes' rows of the results in -out are carried over, and the notes say from which binary")
		claimWait = flag.Duration("claims-timeout", 2*time.Minute, "how long a claim of the claims benchmark may take to become Ready")
		keepHome  = flag.Bool("keep-home", false, "keep the throwaway PADDOCK_HOME (state, logs) for inspection")
		skipProv  = flag.Bool("skip-provision", false, "skip the provisioning benchmark")
		skipClaim = flag.Bool("skip-claims", false, "skip the claims benchmark")
		skipValid = flag.Bool("skip-validate", false, "skip the validate benchmark")
		fleet     = flag.String("fleet", "", "stack counts of the fleet benchmark, e.g. 1,3,10: one project grown to each count of stacks (each a platform of one tenant on the benchmark's cluster), then `paddock drift --all` timed over it (median of 3); empty skips it and carries over the fleet figures of the results in -out")
		backends  = flag.String("backends", "1,10", "tenant counts of the state backends benchmark, e.g. 1,10: one platform on file://, then on postgres:// (a PostgreSQL server from Debian's packages started on loopback) and s3:// (SeaweedFS's S3 gateway on loopback), no-op up and drift timed with the path each took (median of 5); -backends= (empty) skips it and carries over the backends figures of the results in -out")
		claimNode = flag.String("claims-nodes", "real", "node kind of the claims benchmark's own cluster: real (sandboxes start under gVisor; an error where the machine cannot run one) or fake (kwok: the controller's part only)")
		profile   = flag.Bool("profile", false, "have each paddock run of the provisioning benchmark write a CPU profile of its own process beside its event log in the work directory (keep it with -keep-home)")
		padOnly   = flag.Bool("paddock-only", false, "provisioning: measure paddock's runs alone, without kubectl and the floors (their ratios then read \"–\"): a quick re-measure of a change to paddock; use -out of its own, as the results are not comparable row for row")
		onlySizes = flag.Bool("only-sizes", false, "keep only the provisioning figures of the -tenants measured; by default the results in -out keep their figures at other tenant counts, each named with the binary that measured it")
		gateway   = flag.Bool("gateway", true, "measure the egress gateway's throughput on a cluster of its own with a real node (requests/s and added P50/P95 against a direct connection to the same server, about 4 minutes); -gateway=false carries over the gateway figures of the results in -out")
		gwConc    = flag.Int("gateway-c", 16, "workers of the gateway benchmark's load generator")
		gwDur     = flag.Duration("gateway-d", 20*time.Second, "measured time of each run of the gateway benchmark (after 5 s of warmup)")
		gwRounds  = flag.Int("gateway-rounds", 3, "rounds of the gateway benchmark, each running both paths (the first alternating); the figures are the rounds' medians")
		rerender  = flag.Bool("rerender", false, "measure nothing: rewrite README.md and provision.png from the results.json in -out")
	)
	flag.Parse()
	if *rerender {
		res, err := bench.ReadResults(filepath.Join(*outDir, "results.json"))
		if err != nil {
			return err
		}
		if *baseline != "" {
			if res.Baseline, err = baselineFrom(*baseline); err != nil {
				return err
			}
		}
		return writeResults(res, *outDir)
	}
	counts, err := intList(*tenants)
	if err != nil {
		return fmt.Errorf("-tenants: %w", err)
	}
	sizes, err := intList(*lines)
	if err != nil {
		return fmt.Errorf("-validate-lines: %w", err)
	}
	fleetSizes, err := intList(*fleet)
	if err != nil {
		return fmt.Errorf("-fleet: %w", err)
	}
	backendSizes, err := intList(*backends)
	if err != nil {
		return fmt.Errorf("-backends: %w", err)
	}
	bin, err := filepath.Abs(*paddock)
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("%s: build it first (make build)", bin)
	}
	// The results name the binary measured, asked before anything runs.
	build, err := bench.BuildOf(bin)
	if err != nil {
		return fmt.Errorf("%w\n(the results must name the commit of the binary they measured: build it with `make build`)", err)
	}
	// The "before" is read now: the first save below replaces the file.
	var before *bench.Baseline
	noBefore := "No before/after table: there were no results in -out to replace."
	// The results being replaced: the "before", and the provisioning or
	// claims figures a run that skips them carries over rather than drops.
	old, oldErr := bench.ReadResults(filepath.Join(*outDir, "results.json"))
	switch {
	case *baseline != "":
		if before, err = baselineFrom(*baseline); err != nil {
			return err
		}
	case oldErr == nil:
		if before = bench.BaselineOf(old); before == nil {
			noBefore = "No before/after table: the results this run replaced did not name the binary they measured, or held no provisioning figures."
		}
	case !os.IsNotExist(oldErr):
		return fmt.Errorf("the results to be replaced: %w (they are the report's \"before\": move them away, or name others with -baseline)", oldErr)
	}
	full, err := hasFlag(bin, "up", "--full")
	if err != nil {
		return err
	}
	realHome := paths.Home()
	kubectl := filepath.Join(realHome, "bin", "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		return fmt.Errorf("%s is missing: run `make tools` first", kubectl)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// A throwaway home: tools and the provider plugin from the real one,
	// state, passphrase and the cluster of its own.
	home, err := os.MkdirTemp("", "paddock-bench-")
	if err != nil {
		return err
	}
	for _, d := range []string{"bin", "pulumi"} {
		if err := os.Symlink(filepath.Join(realHome, d), filepath.Join(home, d)); err != nil {
			return err
		}
	}
	env := []string{"PADDOCK_HOME=" + home}
	paddockCmd := func(args ...string) *exec.Cmd {
		c := exec.CommandContext(ctx, bin, args...)
		c.Env = append(os.Environ(), env...)
		return c
	}
	defer func() {
		if !*keepHome {
			os.RemoveAll(home)
		}
	}()
	// The provisioning benchmark's cluster (the fleet's too), only when one
	// of them runs: an idle control plane beside the claims benchmark's real
	// node would take CPU from the sandboxes being timed.
	if !*skipProv || len(fleetSizes) > 0 || len(backendSizes) > 0 {
		fmt.Println("paddock-bench: starting a local cluster in", home)
		// kwok nodes: 100 tenants must not need 200 real pods.
		if out, err := paddockCmd("local", "up", "--nodes", "fake").CombinedOutput(); err != nil {
			return fmt.Errorf("local up: %v\n%s", err, out)
		}
		defer func() {
			// Not ctx: an interrupt cancels it, and the cluster must still go.
			down := exec.Command(bin, "local", "down")
			down.Env = append(os.Environ(), env...)
			if out, err := down.CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "paddock-bench: local down: %v\n%s", err, out)
			}
		}()
	}
	kubeconfig := filepath.Join(home, "local", "kubeconfig")
	work := filepath.Join(home, "specs")

	res := &bench.Results{
		Format:   bench.ResultsFormat,
		Date:     time.Now().UTC().Format("2006-01-02 15:04 MST"),
		Machine:  machine(),
		Paddock:  build,
		Baseline: before,
		Versions: map[string]string{
			"pulumi":            pins.Get("PULUMI_VERSION"),
			"pulumi-kubernetes": pins.Get("PULUMI_KUBERNETES_VERSION"),
			"kubernetes":        pins.Get("KUBERNETES_VERSION"),
			"agent-sandbox":     pins.Get("AGENT_SANDBOX_VERSION"),
			"kwok":              pins.Get("KWOK_VERSION"),
		},
	}
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		return err
	}
	save := func() error { return writeResults(res, *outDir) }
	if before == nil {
		res.Notes = append(res.Notes, noBefore)
	}
	if !full {
		res.Notes = append(res.Notes, "The binary measured has no `up --full`: the no-op's Pulumi path was not measured.")
	}
	for _, n := range counts {
		if *everyMax > 0 && n > *everyMax {
			res.Notes = append(res.Notes, fmt.Sprintf("every-step checkpoints measured up to %d tenants (-every-step-max): their cost grows with the square of the platform's size.", *everyMax))
			break
		}
	}
	for _, n := range counts {
		if full && *fullMax > 0 && n > *fullMax {
			res.Notes = append(res.Notes, fmt.Sprintf("`up --full` measured up to %d tenants (-full-max): above, its Pulumi refresh and update take minutes.", *fullMax))
			break
		}
	}

	// measured records who measured a section this run; carried keeps an
	// earlier run's section with who measured it and says so in the notes.
	res.MeasuredBy = map[string]bench.Measured{}
	measured := func(section string) {
		res.MeasuredBy[section] = bench.Measured{Paddock: build, Date: res.Date}
	}
	carried := func(section, what, flag string) {
		m := old.MeasuredOf(section)
		res.MeasuredBy[section] = m
		res.Notes = append(res.Notes, fmt.Sprintf("%s: not measured by this run (%s); the figures below are carried over from binary %.12s (%s).", what, flag, m.Paddock.Commit, m.Date))
	}

	// validate: quick, and needs no cluster.
	if *skipValid {
		sizes = nil
		if oldErr == nil && len(old.Validate) > 0 && old.Paddock != nil {
			res.Validate = old.Validate
			carried(bench.SectionValidate, "validate", "-skip-validate")
		}
	} else {
		measured(bench.SectionValidate)
	}
	for _, n := range sizes {
		spec, got := specgen.OfLines(n)
		dir := filepath.Join(work, fmt.Sprintf("validate-%d", n))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "platform.hcl"), []byte(spec), 0o644); err != nil {
			return err
		}
		var walls []float64
		var peak int64
		for i := 0; i < 5; i++ {
			r, err := bench.Measure(ctx, paddockCmd("validate", dir))
			if err != nil {
				return err
			}
			walls = append(walls, r.Wall.Seconds())
			if r.PeakRSS["paddock"] > peak {
				peak = r.PeakRSS["paddock"]
			}
		}
		sort.Float64s(walls)
		v := bench.ValidateRun{Lines: got, Tenants: strings.Count(spec, "\ntenant "), Seconds: walls[len(walls)/2], PeakRSS: peak}
		fmt.Printf("bench: validate %6d lines: %.3fs peak %s\n", v.Lines, v.Seconds, bench.MiB(v.PeakRSS))
		res.Validate = append(res.Validate, v)
	}
	if err := save(); err != nil {
		return err
	}

	if !*skipProv {
		measured(bench.SectionProvision)
		if oldErr == nil && !*onlySizes {
			res.CarrySizes(old, counts)
		}
		// One size at a time, each saved as it ends, with who measured it
		// and how loaded the shared machine was.
		for _, n := range counts {
			by := bench.SizeRun{Tenants: n, Paddock: build, Date: res.Date, Machine: res.Machine, LoadStart: bench.LoadAverage()}
			samples, err := bench.Provision(ctx, bench.ProvisionOptions{
				Paddock: bin, Kubectl: kubectl, Kubeconfig: kubeconfig, Env: env,
				Tenants: []int{n}, EveryStepMax: *everyMax, Full: full, FullMax: *fullMax, WorkDir: work,
				StateDir: filepath.Join(home, "state"), Profile: *profile, PaddockOnly: *padOnly, Out: os.Stdout,
			})
			res.Provision = append(res.Provision, samples...)
			by.LoadEnd = bench.LoadAverage()
			res.ProvisionBy = append(res.ProvisionBy, by)
			if serr := save(); serr != nil {
				return serr
			}
			if err != nil {
				return err
			}
		}
	} else if oldErr == nil && len(old.Provision) > 0 && old.Paddock != nil {
		res.Provision, res.ProvisionBy = old.Provision, old.ProvisionBy
		carried(bench.SectionProvision, "Provisioning", "-skip-provision")
	}

	// On the same cluster, once provisioning has left it empty; each
	// backend's platform is destroyed before the next.
	if len(backendSizes) > 0 {
		runs, err := benchBackends(ctx, bin, env, backendSizes, filepath.Join(work, "backends"))
		res.Backends = runs
		measured(bench.SectionBackends)
		if serr := save(); serr != nil {
			return serr
		}
		if err != nil {
			return err
		}
	} else if oldErr == nil {
		bench.CarryBackends(res, old)
	}

	// On the same cluster, once provisioning has left it empty; the fleet's
	// stacks stay until the cluster goes.
	if len(fleetSizes) > 0 {
		runs, err := bench.Fleet(ctx, bench.FleetOptions{
			Paddock: bin, Env: env, Stacks: fleetSizes, Dir: filepath.Join(work, "fleet"), Out: os.Stdout,
		})
		res.Fleet = runs
		measured(bench.SectionFleet)
		if serr := save(); serr != nil {
			return serr
		}
		if err != nil {
			return err
		}
	} else if oldErr == nil {
		bench.CarryFleet(res, old)
	}

	if !*skipClaim {
		modes, err := bench.ClaimModes(strings.FieldsFunc(*claimMode, func(r rune) bool { return r == ',' }))
		if err != nil {
			return fmt.Errorf("-claims-modes: %w", err)
		}
		claims, fit, err := benchClaims(ctx, bin, realHome, *claimNode, claimsRun{count: *claims, pool: *poolSize, burst: *burst, timeout: *claimWait, modes: modes}, *keepHome)
		if err != nil {
			return err
		}
		res.Claims, res.ClaimsNodes, res.ClaimsFit = claims, *claimNode, fit
		measured(bench.SectionClaims)
		if oldErr == nil {
			if note := bench.CarryClaimModes(res, old, modes); note != "" {
				res.Notes = append(res.Notes, note)
			}
		}
	} else if oldErr == nil && len(old.Claims) > 0 && old.Paddock != nil {
		res.Claims, res.ClaimsNodes, res.ClaimsFit = old.Claims, old.ClaimsNodes, old.ClaimsFit
		carried(bench.SectionClaims, "Sandbox start through claims", "-skip-claims")
	}
	if err := save(); err != nil {
		return err
	}

	// A real node of its own, after the claims' has gone: the machine runs
	// one real node at a time.
	if *gateway {
		g, err := bench.Gateway(ctx, bench.GatewayOptions{Paddock: bin, Kubectl: kubectl, RealHome: realHome,
			Concurrency: *gwConc, Duration: *gwDur, Warmup: 5 * time.Second, Rounds: *gwRounds, KeepHome: *keepHome, Out: os.Stdout})
		if err != nil {
			return err
		}
		res.Gateway = g
		measured(bench.SectionGateway)
		if err := save(); err != nil {
			return err
		}
	} else if oldErr == nil {
		bench.CarryGateway(res, old)
		if err := save(); err != nil {
			return err
		}
	}
	fmt.Printf("paddock-bench: results in %s\n", *outDir)
	return nil
}

// benchBackends runs the backends section: file:// in a directory of its
// own, then postgres:// on a server started here on loopback for the
// section alone (reported as not measured, with the reason, when the
// machine has no PostgreSQL).
func benchBackends(ctx context.Context, bin string, env []string, sizes []int, dir string) ([]bench.BackendRun, error) {
	fileState := filepath.Join(dir, "file-state")
	if err := os.MkdirAll(fileState, 0o700); err != nil {
		return nil, err
	}
	list := []bench.Backend{{Name: bench.BackendFile, URL: "file://" + fileState, Server: "a directory on local disk"}}
	pg := bench.Backend{Name: bench.BackendPostgres}
	server, err := pgtest.Launch(pgtest.Options{})
	switch {
	case errors.Is(err, pgtest.ErrNotInstalled):
		pg.Unavailable = err.Error()
	case err != nil:
		return nil, fmt.Errorf("starting PostgreSQL for the backends benchmark: %w", err)
	default:
		defer server.Stop()
		url, err := server.CreateDatabase(ctx)
		if err != nil {
			return nil, err
		}
		version, err := server.Version(ctx)
		if err != nil {
			return nil, err
		}
		pg.URL, pg.Server, pg.Secrets = url, "PostgreSQL "+version+" on 127.0.0.1", []string{server.Password}
	}
	list = append(list, pg)
	s3 := bench.Backend{Name: bench.BackendS3}
	weed, stopWeed, err := s3test.Launch()
	switch {
	case errors.Is(err, s3test.ErrNotBuilt):
		s3.Unavailable = err.Error()
	case err != nil:
		return nil, fmt.Errorf("starting SeaweedFS for the backends benchmark: %w", err)
	default:
		defer stopWeed()
		bucket, err := weed.CreateBucket(ctx)
		if err != nil {
			return nil, err
		}
		s3.URL, s3.Env, s3.Secrets = weed.BackendURL(bucket, ""), weed.Env(), []string{weed.SecretKey}
		s3.Server = "SeaweedFS " + pins.Get("SEAWEEDFS_VERSION") + " (S3 gateway) on 127.0.0.1"
	}
	list = append(list, s3)
	return bench.Backends(ctx, bench.BackendsOptions{Paddock: bin, Env: env, Backends: list, Tenants: sizes, Dir: dir, Out: os.Stdout})
}

// baselineFrom is the "before" of -baseline: that file's own measurements.
func baselineFrom(file string) (*bench.Baseline, error) {
	old, err := bench.ReadResults(file)
	if err != nil {
		return nil, fmt.Errorf("-baseline: %w", err)
	}
	if err := old.Identified(); err != nil {
		return nil, fmt.Errorf("-baseline %s: %w", file, err)
	}
	b := bench.OwnBaseline(old)
	if b == nil {
		return nil, fmt.Errorf("-baseline %s: it holds no provisioning figures", file)
	}
	return b, nil
}

// hasFlag says whether bin's command takes flag, from its help.
func hasFlag(bin, command, flag string) (bool, error) {
	out, err := exec.Command(bin, command, "--help").CombinedOutput()
	if err != nil {
		return false, fmt.Errorf("%s %s --help: %v\n%s", bin, command, err, out)
	}
	for _, f := range strings.Fields(string(out)) {
		if strings.TrimSuffix(f, ",") == flag {
			return true, nil
		}
	}
	return false, nil
}

func machine() string {
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				f := strings.Fields(v)
				if len(f) > 0 {
					kb, _ := strconv.ParseInt(f[0], 10, 64)
					mem = fmt.Sprintf(", %.0f GiB", float64(kb)/(1<<20))
				}
			}
		}
	}
	return fmt.Sprintf("%s/%s, %d CPUs%s, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), mem, runtime.Version())
}

// writeResults analyses res and writes results.json, README.md and provision.png.
func writeResults(res *bench.Results, outDir string) error {
	// Checked before anything is written: a rerender of results that do
	// not name their binary leaves the old files as they are.
	if err := res.Identified(); err != nil {
		return err
	}
	res.Analyse()
	if err := res.WriteJSON(filepath.Join(outDir, "results.json")); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(outDir, "README.md"))
	if err != nil {
		return err
	}
	if err := res.WriteMarkdown(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if len(res.Provision) > 0 {
		return res.WritePlot(filepath.Join(outDir, "provision.png"))
	}
	return nil
}

// claimsRun is what the claims benchmark is asked for.
type claimsRun struct {
	count, pool, burst int
	timeout            time.Duration
	modes              []string
}

// benchClaims measures claim → Ready on a cluster of its own, with nodes of
// the given kind: on the real node each sandbox's container starts under
// gVisor, so the figures include what an agent waits for, not only the
// controller. The provisioning cluster stays on kwok nodes (100 tenants must
// not need 200 real pods). A pool of 0 is sized for the node (bench.FitNode,
// bench.PoolForNode) from a first `up` with a pool of 1.
func benchClaims(ctx context.Context, bin, realHome, nodes string, o claimsRun, keepHome bool) ([]bench.ClaimsResult, *bench.NodeFit, error) {
	home, err := os.MkdirTemp("", "paddock-bench-claims-")
	if err != nil {
		return nil, nil, err
	}
	for _, d := range []string{"bin", "pulumi"} {
		if err := os.Symlink(filepath.Join(realHome, d), filepath.Join(home, d)); err != nil {
			return nil, nil, err
		}
	}
	env := append(os.Environ(), "PADDOCK_HOME="+home)
	paddockCmd := func(args ...string) *exec.Cmd {
		c := exec.CommandContext(ctx, bin, args...)
		c.Env = env
		return c
	}
	fmt.Printf("paddock-bench: claims on a cluster with %s nodes in %s\n", nodes, home)
	if out, err := paddockCmd("local", "up", "--nodes", nodes).CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("local up --nodes %s for the claims benchmark (-claims-nodes fake measures the controller alone): %v\n%s", nodes, err, out)
	}
	defer func() {
		down := exec.Command(bin, "local", "down")
		down.Env = env
		if out, err := down.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "paddock-bench: local down (claims): %v\n%s", err, out)
		}
		if !keepHome {
			os.RemoveAll(home)
		}
	}()
	dir := filepath.Join(home, "specs", "claims")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	// The node's own image: nothing is pulled here. The shell traps TERM so a
	// claimed sandbox stops at once when its claim is deleted.
	up := func(replicas int) error {
		spec := specgen.Generate(specgen.Options{Platform: "claims", Tenants: 1, Replicas: replicas, ColdPool: true,
			Image: localcluster.SandboxImage, Command: []string{"/bin/sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"}})
		if err := os.WriteFile(filepath.Join(dir, "platform.hcl"), []byte(spec), 0o644); err != nil {
			return err
		}
		if out, err := paddockCmd("up", dir).CombinedOutput(); err != nil {
			return fmt.Errorf("up of the claims platform (pool of %d): %v\n%s", replicas, err, out)
		}
		return nil
	}
	var fit *bench.NodeFit
	if o.pool > 0 {
		if err := up(o.pool); err != nil {
			return nil, nil, err
		}
	} else {
		if err := up(1); err != nil {
			return nil, nil, err
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(home, "local", "kubeconfig"))
		if err != nil {
			return nil, nil, err
		}
		kube, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, nil, err
		}
		ns := "agents-" + specgen.TenantName(0)
		f, err := bench.FitNode(ctx, kube, ns, o.timeout)
		if err != nil {
			return nil, nil, err
		}
		f.Pool, f.PoolWhy = bench.PoolForNode(f.Holds)
		fmt.Printf("paddock-bench: claims: the node holds %d sandboxes (%s): %s\n", f.Holds, f.Bound, f.PoolWhy)
		if err := up(f.Pool); err != nil {
			return nil, nil, err
		}
		// With the pool full, before the first claim.
		if f.SandboxMemory, err = bench.SandboxMemory(ctx, kube, ns, f.Pool, 2*o.timeout); err != nil {
			return nil, nil, fmt.Errorf("the claims pool of %d: %w", f.Pool, err)
		}
		fmt.Printf("paddock-bench: claims: a running sandbox takes %s\n", bench.MiB(f.SandboxMemory))
		fit = &f
	}
	args := []string{"bench", "claims", dir, "--pool", "agent", "--cold-pool", "cold", "--claims", strconv.Itoa(o.count), "--timeout", o.timeout.String(), "--format", "json"}
	if o.burst > 0 {
		args = append(args, "--burst", strconv.Itoa(o.burst))
	}
	if len(o.modes) > 0 {
		args = append(args, "--modes", strings.Join(o.modes, ","))
	}
	c := paddockCmd(args...)
	c.Stderr = os.Stdout
	out, err := c.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("paddock bench claims: %v", err)
	}
	var res []bench.ClaimsResult
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, nil, fmt.Errorf("paddock bench claims JSON: %v\n%s", err, out)
	}
	if out, err := paddockCmd("destroy", dir).CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("destroy of the claims platform: %v\n%s", err, out)
	}
	return res, fit, nil
}
