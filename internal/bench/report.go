package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
)

// Results are everything one `make bench` run measured.
type Results struct {
	// Format is the results' format version: 2 counts a direct child's CPU
	// without its descendants' (1 counted them in, see Upgrade); 3 records
	// the measured binary (Paddock) and has every create wait for the warm
	// pools to be Ready; 4 measures the binary's default as "paddock"
	// (every-step checkpoints as their own tool), the no-op's --full path,
	// the destroy floor, each run's summary line, and keeps the figures it
	// replaced (Baseline).
	Format int `json:"format"`
	// UpgradedFrom is the format the results were read in (ReadResults).
	UpgradedFrom int `json:"-"`
	// Date, Machine and Versions say where and with what it ran; Versions
	// are the pinned upstreams, Paddock the binary measured.
	Date     string            `json:"date"`
	Machine  string            `json:"machine"`
	Paddock  *Build            `json:"paddock,omitempty"`
	Versions map[string]string `json:"versions"`
	// Provision are the provisioning samples; Validate the validate runs;
	// Claims the sandbox start measurements.
	Provision []Sample       `json:"provision"`
	Validate  []ValidateRun  `json:"validate"`
	Claims    []ClaimsResult `json:"claims,omitempty"`
	// Fleet are the runs of `paddock drift --all` over projects of growing
	// numbers of stacks (-fleet).
	Fleet []FleetRun `json:"fleet,omitempty"`
	// Backends are the no-op up and drift of one platform on each state
	// backend (file://, postgres://), with the path each run took.
	Backends []BackendRun `json:"backends,omitempty"`
	// ClaimsNodes is the node kind the claims ran on: real (containers
	// start under gVisor) or fake (kwok: the controller's part only).
	ClaimsNodes string `json:"claimsNodes,omitempty"`
	// ClaimsFit is how the claims' warm pool was sized for the node, when
	// it was (-pool 0).
	ClaimsFit *NodeFit `json:"claimsNodeFit,omitempty"`
	// Gateway is the egress gateway's throughput against a direct
	// connection to the same server, on the real node (gateway.go).
	Gateway *GatewayResult `json:"gateway,omitempty"`
	// MeasuredBy names, per section ("provision", "validate", "claims",
	// "fleet", "backends"), the binary and date that measured it: a run
	// that skips a section carries its figures over together with who
	// measured them, so a claims-only run never claims the provisioning
	// figures as its own.
	MeasuredBy map[string]Measured `json:"measuredBy,omitempty"`
	// ProvisionBy names, per tenant count of the provisioning benchmark,
	// the binary, date and machine that measured it: a run at some sizes
	// (-tenants 1000) keeps the other sizes' figures of the results it
	// replaces, each still named with what measured it.
	ProvisionBy []SizeRun `json:"provisionBy,omitempty"`
	// Notes say what the run left out and why (a mode skipped above a size,
	// a flag the binary lacks).
	Notes []string `json:"notes,omitempty"`
	// Baseline is what the results replaced: the "before" of the report's
	// before/after table.
	Baseline *Baseline       `json:"baseline,omitempty"`
	Fits     map[string]Fit  `json:"fits"`
	Targets  []TargetVerdict `json:"targets"`
}

// Build identifies the paddock binary a run measured: the commit it reports
// itself (`paddock version --commit`, linked in by `make build`) and the
// checksum of the file, read when the run starts.
type Build struct {
	Commit string `json:"commit"`
	Binary string `json:"binary"`
	SHA256 string `json:"sha256"`
}

// Measured is the binary and the date of one section's measurements.
type Measured struct {
	Paddock *Build `json:"paddock"`
	Date    string `json:"date"`
}

// SizeRun is who measured the provisioning figures at one tenant count,
// on what machine, and how loaded it was when the size's runs began and
// ended (1, 5 and 15 minute load averages).
type SizeRun struct {
	Tenants   int       `json:"tenants"`
	Paddock   *Build    `json:"paddock"`
	Date      string    `json:"date"`
	Machine   string    `json:"machine"`
	LoadStart []float64 `json:"loadAvgStart,omitempty"`
	LoadEnd   []float64 `json:"loadAvgEnd,omitempty"`
}

// SizeRunOf is who measured n tenants: ProvisionBy's entry, else, for
// results written before it, the provisioning section's binary and date on
// the run's machine.
func (r *Results) SizeRunOf(n int) SizeRun {
	for _, s := range r.ProvisionBy {
		if s.Tenants == n && s.Paddock != nil {
			return s
		}
	}
	m := r.MeasuredOf(SectionProvision)
	return SizeRun{Tenants: n, Paddock: m.Paddock, Date: m.Date, Machine: r.Machine}
}

// CarrySizes adds to r the provisioning figures of old at the tenant
// counts neither r holds nor the run is measuring, each with who measured
// it, and says so in the notes: the sizes a run measures replace old's.
// It returns the sizes carried.
func (r *Results) CarrySizes(old *Results, measuring []int) []int {
	if old == nil || old.Paddock == nil {
		return nil
	}
	have := map[int]bool{}
	for _, s := range r.Provision {
		have[s.Tenants] = true
	}
	for _, n := range measuring {
		have[n] = true
	}
	var carried []int
	for _, n := range old.tenantCounts() {
		if have[n] {
			continue
		}
		carried = append(carried, n)
		for _, s := range old.Provision {
			if s.Tenants == n {
				r.Provision = append(r.Provision, s)
			}
		}
		by := old.SizeRunOf(n)
		r.ProvisionBy = append(r.ProvisionBy, by)
		r.Notes = append(r.Notes, fmt.Sprintf("Provisioning at %s: not measured by this run (-tenants); carried over from binary %.12s (%s).", tenantsText(n), by.Paddock.Commit, by.Date))
	}
	return carried
}

// Sections of the results MeasuredBy speaks for.
const (
	SectionProvision = "provision"
	SectionValidate  = "validate"
	SectionClaims    = "claims"
	SectionFleet     = "fleet"
	SectionBackends  = "backends"
)

// MeasuredOf is who measured section: MeasuredBy's entry, or for results
// written before MeasuredBy, the run's own binary and date.
func (r *Results) MeasuredOf(section string) Measured {
	if m, ok := r.MeasuredBy[section]; ok && m.Paddock != nil {
		return m
	}
	return Measured{Paddock: r.Paddock, Date: r.Date}
}

// measuredLine is the line under a section's heading naming who measured it.
func (r *Results) measuredLine(section string) string {
	m := r.MeasuredOf(section)
	if m.Paddock == nil {
		return ""
	}
	return fmt.Sprintf("Measured by binary %.12s on %s.\n\n", m.Paddock.Commit, m.Date)
}

// ErrNoBuild is a result that does not say which binary it measured.
var ErrNoBuild = errors.New("the results do not name the paddock binary they measured (its commit from `paddock version --commit`): measure again with `make bench`, a hand-written version is not accepted")

// Identified is nil when the results name the binary they measured, and
// ErrNoBuild otherwise; nothing of them is rendered without it.
func (r *Results) Identified() error { return r.Paddock.check() }

// check refuses a build that does not identify a binary.
func (b *Build) check() error {
	if b == nil || b.Commit == "" || b.Commit == "unknown" || b.SHA256 == "" {
		return ErrNoBuild
	}
	return nil
}

// ValidateRun is `paddock validate` on a generated spec.
type ValidateRun struct {
	Lines   int     `json:"lines"`
	Tenants int     `json:"tenants"`
	Seconds float64 `json:"seconds"` // median of the runs
	PeakRSS int64   `json:"peakRssBytes"`
}

// Fit is a least-squares line seconds = Intercept + PerTenant * tenants.
type Fit struct {
	Intercept float64 `json:"interceptSeconds"`
	PerTenant float64 `json:"secondsPerTenant"`
	R2        float64 `json:"r2"`
}

// TargetVerdict is one of the targets and whether Paddock met it;
// a target the run did not measure (that size or that run missing) is not
// Measured, and is never Met.
type TargetVerdict struct {
	Target   string `json:"target"`
	Value    string `json:"value"`
	Measured bool   `json:"measured"`
	Met      bool   `json:"met"`
}

// Verdict is "yes", "no" or "not measured".
func (t TargetVerdict) Verdict() string {
	switch {
	case !t.Measured:
		return "not measured"
	case t.Met:
		return "yes"
	}
	return "no"
}

// Find returns the sample of tool/op at n tenants.
func (r *Results) Find(tool, op string, n int) (Sample, bool) {
	for _, s := range r.Provision {
		if s.Tool == tool && s.Op == op && s.Tenants == n {
			return s, true
		}
	}
	return Sample{}, false
}

func (r *Results) tenantCounts() []int {
	seen := map[int]bool{}
	var out []int
	for _, s := range r.Provision {
		if !seen[s.Tenants] {
			seen[s.Tenants] = true
			out = append(out, s.Tenants)
		}
	}
	sort.Ints(out)
	return out
}

// allSeries are the tool/op lines the table and plot may hold, in their
// order; the paddock-final ones exist only in results before format 4.
var allSeries = []struct{ Tool, Op string }{
	{ToolPaddock, OpCreate}, {ToolPaddockEveryStep, OpCreate}, {ToolPaddockFinal, OpCreate}, {ToolKubectl, OpCreate}, {ToolFloor, OpCreate},
	{ToolKubectl, OpApplyOnly}, {ToolFloor, OpApplyOnly},
	{ToolPaddock, OpNoop}, {ToolPaddockFinal, OpNoop}, {ToolPaddock, OpNoopFull},
	{ToolPaddock, OpDrift}, {ToolPaddockFinal, OpDrift},
	{ToolPaddock, OpDestroy}, {ToolPaddockEveryStep, OpDestroy}, {ToolPaddockFinal, OpDestroy}, {ToolFloor, OpDestroy},
}

// series are those of allSeries the results hold a sample of.
func (r *Results) series() []struct{ Tool, Op string } {
	var out []struct{ Tool, Op string }
	for _, s := range allSeries {
		for _, smp := range r.Provision {
			if smp.Tool == s.Tool && smp.Op == s.Op {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

func seriesName(tool, op string) string {
	switch tool {
	case ToolPaddock:
		return "paddock " + op
	case ToolPaddockEveryStep:
		return "paddock " + op + " (every-step)"
	case ToolPaddockFinal:
		return "paddock " + op + " (final checkpoint)"
	}
	return tool + " " + op
}

// mainTool is the paddock whose figures the ratios and targets judge: the
// binary's default, or, in results before format 4, --checkpoints final
// (the mode the targets of those days were judged on).
func (r *Results) mainTool() string {
	for _, s := range r.Provision {
		if s.Tool == ToolPaddock {
			return ToolPaddock
		}
	}
	return ToolPaddockFinal
}

// The provisioning targets, judged by Analyse: issue 14's at 1 tenant,
// issue 39's at every size up to the spec's limit of tenants.
const (
	// TargetSmallSeconds bounds a no-op up and a drift of TargetSmallTenants.
	TargetSmallSeconds = 2.0
	TargetSmallTenants = 1
	// TargetPer100Seconds bounds them per 100 resources at every size from
	// TargetPer100From tenants (below it, the process's start is most of
	// the time, and TargetSmallSeconds speaks for them); TargetNoopSeconds
	// bounds them in all at every size.
	TargetPer100Seconds = 0.1
	TargetPer100From    = 100
	TargetNoopSeconds   = 15.0
	// TargetCreateRatio bounds create against the SSA floor at every size,
	// TargetDestroyRatio destroy against the destroy floor.
	TargetCreateRatio  = 1.5
	TargetDestroyRatio = 1.5
	// TargetTreeBytes bounds the whole process tree of every paddock run
	// at every size.
	TargetTreeBytes = 2 << 30
	// TargetLimitTenants is the most tenants a spec may declare: a run
	// that did not measure it leaves its targets not measured.
	TargetLimitTenants = 1000
)

// The sandbox start targets (issue 25), judged on real nodes only (a kwok
// node starts nothing) over at least TargetClaims claims per mode.
const (
	TargetWarmP50Seconds = 0.15
	TargetWarmP95Seconds = 0.3
	TargetColdP50Seconds = 2.5
	TargetClaims         = 100
)

// Analyse fits a line per series and judges the targets of the issue.
func (r *Results) Analyse() {
	sort.SliceStable(r.Provision, func(i, j int) bool { return r.Provision[i].Tenants < r.Provision[j].Tenants })
	sort.SliceStable(r.ProvisionBy, func(i, j int) bool { return r.ProvisionBy[i].Tenants < r.ProvisionBy[j].Tenants })
	r.Fits = map[string]Fit{}
	for _, s := range r.series() {
		var xs, ys []float64
		for _, smp := range r.Provision {
			if smp.Tool == s.Tool && smp.Op == s.Op {
				xs = append(xs, float64(smp.Tenants))
				ys = append(ys, smp.Seconds)
			}
		}
		if len(xs) >= 2 {
			r.Fits[seriesName(s.Tool, s.Op)] = fitLine(xs, ys)
		}
	}
	r.Targets = r.judge()
}

// judge measures the results against each target of the issues; a target
// whose size or run is missing is reported as not measured, never dropped,
// and so is every target at TargetLimitTenants until a run measures it.
func (r *Results) judge() []TargetVerdict {
	tool := r.mainTool()
	sizes := r.tenantCounts()
	atLimit := false
	for _, n := range sizes {
		atLimit = atLimit || n == TargetLimitTenants
	}
	var out []TargetVerdict
	notAtLimit := func(target string) {
		if !atLimit {
			out = append(out, TargetVerdict{Target: fmt.Sprintf("%s (%s)", target, tenantsText(TargetLimitTenants)), Value: "no run at this size"})
		}
	}
	for _, op := range []string{OpNoop, OpDrift} {
		name := seriesName(tool, op)
		v := TargetVerdict{Target: fmt.Sprintf("%s ≤ %.0f s at %s", name, TargetSmallSeconds, tenantsText(TargetSmallTenants)), Value: "no run at this size"}
		if s, ok := r.Find(tool, op, TargetSmallTenants); ok {
			v.Value, v.Measured, v.Met = fmt.Sprintf("%.2f s", s.Seconds), true, s.Seconds <= TargetSmallSeconds
		}
		out = append(out, v)
	}
	for _, op := range []string{OpNoop, OpDrift} {
		name := seriesName(tool, op)
		judged := false
		for _, n := range sizes {
			s, ok := r.Find(tool, op, n)
			if !ok || n == TargetSmallTenants {
				continue
			}
			if n < TargetPer100From {
				judged = true
				out = append(out, TargetVerdict{Target: fmt.Sprintf("%s ≤ %.0f s (%s)", name, TargetNoopSeconds, tenantsText(n)),
					Value: fmt.Sprintf("%.2f s", s.Seconds), Measured: true, Met: s.Seconds <= TargetNoopSeconds})
				continue
			}
			v := TargetVerdict{Target: fmt.Sprintf("%s ≤ %.1f s per 100 resources and ≤ %.0f s (%s)", name, TargetPer100Seconds, TargetNoopSeconds, tenantsText(n)), Value: "no resource count"}
			count, what := s.Resources, "resources"
			if count == 0 {
				// The create's summary gave no count: the objects are the
				// nearest (and a stricter) measure.
				count, what = s.Objects, "objects"
			}
			if count > 0 {
				judged = true
				per100 := s.Seconds / float64(count) * 100
				v.Value, v.Measured = fmt.Sprintf("%.3f s per 100 (%.2f s for %d %s)", per100, s.Seconds, count, what), true
				v.Met = per100 <= TargetPer100Seconds && s.Seconds <= TargetNoopSeconds
			}
			out = append(out, v)
		}
		if !judged {
			out = append(out, TargetVerdict{Target: fmt.Sprintf("%s ≤ %.1f s per 100 resources and ≤ %.0f s", name, TargetPer100Seconds, TargetNoopSeconds), Value: "no run of more than 1 tenant"})
		}
		notAtLimit(fmt.Sprintf("%s ≤ %.1f s per 100 resources and ≤ %.0f s", name, TargetPer100Seconds, TargetNoopSeconds))
	}
	for _, t := range []struct {
		op, floorName string
		limit         float64
	}{{OpCreate, "the parallel SSA floor", TargetCreateRatio}, {OpDestroy, "the destroy floor", TargetDestroyRatio}} {
		judged := false
		for _, n := range sizes {
			s, ok := r.Find(tool, t.op, n)
			floor, okFloor := r.Find(ToolFloor, t.op, n)
			if !ok || !okFloor || floor.Seconds <= 0 {
				continue
			}
			judged = true
			q := s.Seconds / floor.Seconds
			out = append(out, TargetVerdict{
				Target:   fmt.Sprintf("%s ≤ %.1fx %s (%s)", seriesName(tool, t.op), t.limit, t.floorName, tenantsText(n)),
				Value:    fmt.Sprintf("%.2fx (%.2f s vs %.2f s)", q, s.Seconds, floor.Seconds),
				Measured: true, Met: q <= t.limit,
			})
		}
		if !judged {
			out = append(out, TargetVerdict{Target: fmt.Sprintf("%s ≤ %.1fx %s", seriesName(tool, t.op), t.limit, t.floorName), Value: "no size with both runs"})
		}
		notAtLimit(fmt.Sprintf("%s ≤ %.1fx %s", seriesName(tool, t.op), t.limit, t.floorName))
	}
	judged := false
	for _, n := range sizes {
		var parts []string
		var peak int64
		for _, op := range []string{OpCreate, OpNoop, OpDrift, OpDestroy} {
			if s, ok := r.Find(tool, op, n); ok && s.TreePeakRSS > 0 {
				parts = append(parts, fmt.Sprintf("%s %s", op, MiB(s.TreePeakRSS)))
				peak = max(peak, s.TreePeakRSS)
			}
		}
		if len(parts) == 0 {
			continue
		}
		judged = true
		out = append(out, TargetVerdict{Target: fmt.Sprintf("whole process tree ≤ %s (%s, %s runs)", MiB(TargetTreeBytes), tenantsText(n), tool),
			Value: strings.Join(parts, ", "), Measured: true, Met: peak <= TargetTreeBytes})
	}
	if !judged {
		out = append(out, TargetVerdict{Target: fmt.Sprintf("whole process tree ≤ %s (%s runs)", MiB(TargetTreeBytes), tool), Value: "no run measured its memory"})
	}
	if !atLimit {
		out = append(out, TargetVerdict{Target: fmt.Sprintf("whole process tree ≤ %s (%s, %s runs)", MiB(TargetTreeBytes), tenantsText(TargetLimitTenants), tool), Value: "no run at this size"})
	}
	out = append(out, r.judgeBackends()...)
	return append(out, r.judgeClaims()...)
}

// judgeClaims holds the claims of each mode to the sandbox start targets:
// measured only on real nodes and over TargetClaims claims or more.
func (r *Results) judgeClaims() []TargetVerdict {
	if len(r.Claims) == 0 {
		return nil
	}
	var out []TargetVerdict
	for _, t := range []struct {
		mode, stat string
		limit      float64
	}{{ModeWarm, "P50", TargetWarmP50Seconds}, {ModeWarm, "P95", TargetWarmP95Seconds}, {ModeCold, "P50", TargetColdP50Seconds}} {
		v := TargetVerdict{Target: fmt.Sprintf("%s claim → Ready %s ≤ %.2f s on a real node (%d claims)", t.mode, t.stat, t.limit, TargetClaims), Value: "not run"}
		for _, c := range r.Claims {
			if c.Mode != t.mode {
				continue
			}
			got := c.P50
			if t.stat == "P95" {
				got = c.P95
			}
			switch {
			case r.ClaimsNodes != "real":
				v.Value = "kwok nodes: no sandbox starts"
			case c.Claims < TargetClaims:
				v.Value = fmt.Sprintf("%.3f s over only %d claims", got, c.Claims)
			default:
				v.Value, v.Measured, v.Met = fmt.Sprintf("%.3f s over %d claims", got, c.Claims), true, got <= t.limit
			}
		}
		out = append(out, v)
	}
	return out
}

// fitLine is ordinary least squares with its coefficient of determination.
func fitLine(xs, ys []float64) Fit {
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return Fit{}
	}
	b := (n*sxy - sx*sy) / den
	a := (sy - b*sx) / n
	mean := sy / n
	var ssTot, ssRes float64
	for i := range xs {
		ssTot += (ys[i] - mean) * (ys[i] - mean)
		d := ys[i] - (a + b*xs[i])
		ssRes += d * d
	}
	r2 := 1.0
	if ssTot > 0 {
		r2 = 1 - ssRes/ssTot
	}
	return Fit{Intercept: a, PerTenant: b, R2: r2}
}

// WriteJSON writes the results as indented JSON.
func (r *Results) WriteJSON(file string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, append(b, '\n'), 0o644)
}

// ResultsFormat is the current Results.Format.
const ResultsFormat = 4

// ReadResults reads results.json, upgrading an older format.
func ReadResults(file string) (*Results, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	r.Upgrade()
	return &r, nil
}

// Upgrade brings results of an older format to the current one. Format 1
// (unset) took paddock's CPU from the kernel's figure for the process,
// which includes the Pulumi CLI and provider it waited for. Format 2 has
// kubectl and the floor stop at their last apply while paddock waits for
// the pools: nothing converts that, so those results keep no Paddock build
// and the report refuses them. Before format 4, "paddock" was the
// binary's default of the day, every-step checkpoints: it becomes
// paddock-every-step, so "paddock" always means a crash-safe default that
// saves the state once.
func (r *Results) Upgrade() {
	r.UpgradedFrom = r.Format
	if r.UpgradedFrom == 0 {
		r.UpgradedFrom = 1
	}
	if r.Format < 3 {
		r.Paddock = nil
	}
	if r.Format < 2 {
		for i := range r.Provision {
			c := r.Provision[i].CPU
			if c == nil {
				continue
			}
			if own := c["paddock"] - c["pulumi"] - c["pulumi-resource-kubernetes"]; own > 0 {
				c["paddock"] = own
			}
		}
	}
	if r.Format < 4 {
		for i := range r.Provision {
			if r.Provision[i].Tool == ToolPaddock {
				r.Provision[i].Tool = ToolPaddockEveryStep
			}
		}
	}
	r.Format = ResultsFormat
}
