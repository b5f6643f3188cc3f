package policy_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/policy"
	"github.com/paddock-platform/paddock/internal/spectest"
	"github.com/paddock-platform/paddock/schemas"
	"github.com/paddock-platform/paddock/schemas/specgen"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// testNow is when the tests judge waivers: the insecure example's
// "expires soon" waiver (2026-12-10) is then 9 days from expiry.
var testNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

const insecureDir = "../../examples/insecure"

func mustLoad(t testing.TB, dir string) *model.Platform { return spectest.Load(t, dir) }

func mustLoadSource(t testing.TB, src string) *model.Platform {
	t.Helper()
	l := schemas.NewLoader()
	p, diags := l.LoadSource("spec.hcl", []byte(src), schemas.LoadOptions{Environ: []string{}})
	if diags.HasErrors() {
		var b strings.Builder
		l.WriteDiagnostics(&b, diags)
		t.Fatalf("spec does not load:\n%s", b.String())
	}
	return p
}

// exampleDirs are the examples that must validate clean.
func exampleDirs(t *testing.T) []string {
	dirs, err := filepath.Glob("../../examples/*")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range dirs {
		switch filepath.Base(d) {
		case "insecure", "invalid", "ci": // ci holds a workflow, not a spec
			continue
		}
		if info, err := os.Stat(d); err == nil && info.IsDir() {
			out = append(out, d)
		}
	}
	return out
}

// Every target has an example, and every example validates clean: no
// unwaived error or warning (notes are advice).
func TestExamplesValidateClean(t *testing.T) {
	targets := map[model.TargetKind]bool{}
	gkeIsolations := map[string]bool{}
	for _, dir := range exampleDirs(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			p := mustLoad(t, dir)
			targets[p.Target.Kind] = true
			for _, np := range p.NodePools {
				gkeIsolations[np.Isolation] = true
			}
			r := policy.Check(p, testNow)
			for _, f := range r.Findings {
				if f.Severity != policy.Note {
					t.Errorf("%s %s [%s] %s: %s", f.Src, f.Severity, f.RuleID, f.Title, f.Message)
				}
			}
			if r.Blocking() {
				t.Error("report blocks up")
			}
			for _, ws := range r.Waivers {
				if ws.State != policy.WaiverActive {
					t.Errorf("waiver of %s at %s is %s", ws.Rule, ws.Src, ws.State)
				}
			}
		})
	}
	for _, k := range []model.TargetKind{model.TargetLocal, model.TargetKubeconfig, model.TargetGKE} {
		if !targets[k] {
			t.Errorf("no example for target %q", k)
		}
	}
	for _, iso := range []string{model.IsolationGVisor, model.IsolationKVM} {
		if !gkeIsolations[iso] {
			t.Errorf("no GKE example with isolation %q", iso)
		}
	}
}

// The walking skeleton keeps provisioning the same objects.
func TestLocalExampleObjects(t *testing.T) {
	p := mustLoad(t, "../../examples/local")
	if p.Target.Kind != model.TargetLocal || len(p.Tenants) != 1 || len(p.RuntimeClasses) != 1 {
		t.Fatalf("got target %s, %d tenants, %d runtime classes", p.Target.Kind, len(p.Tenants), len(p.RuntimeClasses))
	}
	tn := p.Tenants[0]
	if tn.Name != "team-a" || len(tn.Templates) != 1 || tn.Templates[0].Name != "agent" || tn.Templates[0].RuntimeClass != "gvisor" ||
		len(tn.WarmPools) != 1 || tn.WarmPools[0].Name != "agent" || tn.WarmPools[0].Replicas != 2 || p.RuntimeClasses[0].Name != "gvisor" {
		t.Errorf("local example changed: %+v", tn)
	}
}

// findingKey identifies a finding across two runs.
func findingKey(f policy.Finding) string {
	return fmt.Sprintf("%s %s %s %s", f.RuleID, f.Object, f.Src, f.Message)
}

func keys(fs []policy.Finding, keep func(policy.Finding) bool) []string {
	var out []string
	for _, f := range fs {
		if keep(f) {
			out = append(out, findingKey(f))
		}
	}
	sort.Strings(out)
	return out
}

// The insecure example trips every static rule the spec language can
// express; the two it cannot are tested on a model in TestLanguageRules.
func TestInsecureTripsEveryStaticRule(t *testing.T) {
	r := policy.Check(mustLoad(t, insecureDir), testNow)
	fired := map[string]int{}
	for _, f := range append(append([]policy.Finding{}, r.Findings...), r.Waived...) {
		fired[f.RuleID]++
	}
	for _, rule := range policy.Rules() {
		switch {
		case rule.Kind == policy.Validity:
			// The GCP layer's validity rules: TestGCPRulesFromSpec.
		case rule.Kind != policy.Static:
			if fired[rule.ID] > 0 {
				t.Errorf("%s is %s but fired", rule.ID, rule.Kind)
			}
		case rule.ID == "PDK-000":
			// Spec errors: the insecure spec loads.
		case rule.Language:
			if fired[rule.ID] > 0 {
				t.Errorf("%s is enforced by the language, but fired on a spec", rule.ID)
			}
		case fired[rule.ID] == 0:
			t.Errorf("%s (%s) does not fire on %s", rule.ID, rule.Title, insecureDir)
		}
	}
	if !r.Blocking() {
		t.Error("the insecure example must block up")
	}
}

// Each waiver silences exactly its rule: adding a waiver for rule X to the
// insecure spec moves every finding of X to Waived and changes nothing else.
func TestEachWaiverSilencesExactlyItsRule(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(insecureDir, "platform.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	base := policy.Check(mustLoadSource(t, string(src)), testNow)
	count := func(fs []policy.Finding, id string) int {
		n := 0
		for _, f := range fs {
			if f.RuleID == id {
				n++
			}
		}
		return n
	}
	var skipped []string
	for _, rule := range policy.Rules() {
		if !rule.Waivable() || rule.Language {
			continue
		}
		unwaived := count(base.Findings, rule.ID)
		if unwaived == 0 {
			skipped = append(skipped, rule.ID) // waived in the file already: its own waiver is the test
			continue
		}
		t.Run(rule.ID, func(t *testing.T) {
			spec := string(src) + fmt.Sprintf("\nwaiver {\n  rule   = %q\n  reason = \"test\"\n}\n", rule.ID)
			r := policy.Check(mustLoadSource(t, spec), testNow)
			if n := count(r.Findings, rule.ID); n != 0 {
				t.Errorf("%d findings of %s left unwaived", n, rule.ID)
			}
			if got, want := count(r.Waived, rule.ID), unwaived+count(base.Waived, rule.ID); got != want {
				t.Errorf("%d findings of %s waived, want %d", got, rule.ID, want)
			}
			other := func(f policy.Finding) bool { return f.RuleID != rule.ID }
			if got, want := keys(r.Findings, other), keys(base.Findings, other); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("other findings changed:\n got %v\nwant %v", got, want)
			}
			if got, want := keys(r.Waived, other), keys(base.Waived, other); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("other waived findings changed:\n got %v\nwant %v", got, want)
			}
			last := r.Waivers[len(r.Waivers)-1]
			if last.State != policy.WaiverActive || last.Silenced != unwaived {
				t.Errorf("the new waiver is %s and silences %d, want active and %d", last.State, last.Silenced, unwaived)
			}
		})
	}
	if strings.Join(skipped, " ") != "PDK-702" {
		t.Errorf("rules not tested: %v, want only PDK-702 (waived in the spec itself)", skipped)
	}
}

// PDK-107 and PDK-405 cannot be written in a spec (the decoder refuses
// them), but policy still checks any model.
func TestLanguageRules(t *testing.T) {
	// The decoder refuses both.
	_, diags := schemas.LoadDir("../../examples/invalid/references", schemas.LoadOptions{Environ: []string{}})
	for _, want := range []string{"Namespace shared by two tenants", "Template of another tenant"} {
		found := false
		for _, d := range diags {
			found = found || d.Summary == want && d.Severity == hcl.DiagError
		}
		if !found {
			t.Errorf("the decoder does not refuse %q", want)
		}
	}

	p := mustLoad(t, "../../examples/local")
	other := model.DefaultTenant("team-b")
	other.Namespace = p.Tenants[0].Namespace
	other.WarmPools = []model.WarmPool{{Name: "stolen", Template: "python", Replicas: 1}}
	p.Tenants = append(p.Tenants, other)
	r := policy.Check(p, testNow)
	for _, id := range []string{"PDK-107", "PDK-405"} {
		n := 0
		for _, f := range r.Findings {
			if f.RuleID == id {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s fired %d times, want 1", id, n)
		}
	}
}

// Every checklist item is traced by a rule, and every rule traces to items
// that exist.
func TestEveryChecklistItemTraced(t *testing.T) {
	traced := map[string][]string{}
	for _, r := range policy.Rules() {
		if !r.Meta && r.Kind != policy.Validity && len(r.Checklist) == 0 {
			t.Errorf("%s traces to no checklist item", r.ID)
		}
		for _, id := range r.Checklist {
			if _, ok := policy.LookupChecklistItem(id); !ok {
				t.Errorf("%s traces to unknown item %s", r.ID, id)
			}
			traced[id] = append(traced[id], r.ID)
		}
	}
	var hardening, launch int
	for _, it := range policy.ChecklistItems() {
		if len(traced[it.ID]) == 0 {
			t.Errorf("checklist item %s (%s) is traced by no rule", it.ID, it.Text)
		}
		switch it.Checklist {
		case policy.Hardening:
			hardening++
		case policy.Launch:
			launch++
		}
	}
	if hardening != 23 || launch != 11 {
		t.Errorf("%d hardening and %d launch items, want 23 and 11", hardening, launch)
	}
}

func TestRuleTitlesUnique(t *testing.T) {
	seen := map[string]string{}
	for _, r := range policy.Rules() {
		if other, dup := seen[r.Title]; dup {
			t.Errorf("%s and %s share the title %q", r.ID, other, r.Title)
		}
		seen[r.Title] = r.ID
		if got, ok := policy.Lookup(r.ID); !ok || got != r {
			t.Errorf("Lookup(%s) = %v", r.ID, got)
		}
	}
}

const waiverHead = `
platform { name = "w" }
target "local" {}
agent_sandbox { version = "v0.5.6" }
runtime_class "gvisor" {
  handler       = "runsc"
  node_selector = { "sandbox.gke.io/runtime" = "gvisor" }
}
audit_sink "a" {
  kind        = "pubsub"
  destination = "projects/paddock-test/topics/audit"
}
tenant "a" {
  template "x" {
    image           = "busybox:1.36"
    runtime_class   = "gvisor"
    read_only_root  = false
  }
  template "y" {
    image           = "busybox:1.36"
    runtime_class   = "gvisor"
    read_only_root  = false
  }
}
`

func TestWaivers(t *testing.T) {
	tests := []struct {
		name     string
		waiver   string
		state    policy.WaiverState
		silenced int
		meta     string // the meta finding expected, "" for none
		detail   string
	}{
		{"platform-wide", `rule = "PDK-306"`, policy.WaiverActive, 2, "", ""},
		{"scoped to one template", `rule = "PDK-306"
  scope = "tenant.a.template.x"`, policy.WaiverActive, 1, "", ""},
		{"scoped to the tenant", `rule = "PDK-306"
  scope = "tenant.a"`, policy.WaiverActive, 2, "", ""},
		{"scope is a prefix of names, not of strings", `rule = "PDK-306"
  scope = "tenant.a.template.xx"`, policy.WaiverUnused, 0, "PDK-003", `Did you mean "tenant.a.template.x"?`},
		{"expired", `rule = "PDK-306"
  expires = "2026-11-30"`, policy.WaiverExpired, 0, "PDK-001", "expired on 2026-11-30"},
		{"holds through its expiry day", `rule = "PDK-306"
  expires = "2026-12-01"`, policy.WaiverActive, 2, "PDK-004", "expires on 2026-12-01"},
		{"expires soon", `rule = "PDK-306"
  expires = "2026-12-15"`, policy.WaiverActive, 2, "PDK-004", "expires on 2026-12-15"},
		{"expires later", `rule = "PDK-306"
  expires = "2027-06-01"`, policy.WaiverActive, 2, "", ""},
		{"unknown rule", `rule = "PDK-36"`, policy.WaiverInvalid, 0, "PDK-002", `Did you mean "PDK-306" (Writable root filesystem)?`},
		{"lower case rule", `rule = "pdk-306"`, policy.WaiverInvalid, 0, "PDK-002", `Did you mean "PDK-306"`},
		{"live rule", `rule = "PDK-506"`, policy.WaiverInvalid, 0, "PDK-002", "verified on the running cluster"},
		{"process rule", `rule = "PDK-801"`, policy.WaiverInvalid, 0, "PDK-002", "organisational control"},
		{"meta rule", `rule = "PDK-001"`, policy.WaiverInvalid, 0, "PDK-002", "about waivers themselves"},
		{"nothing to waive", `rule = "PDK-307"`, policy.WaiverUnused, 0, "PDK-003", "finds nothing in this spec"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustLoadSource(t, waiverHead+"waiver {\n  "+tt.waiver+"\n  reason = \"because\"\n}\n")
			r := policy.Check(p, testNow)
			ws := r.Waivers[0]
			if ws.State != tt.state || ws.Silenced != tt.silenced {
				t.Errorf("waiver %s silencing %d, want %s silencing %d", ws.State, ws.Silenced, tt.state, tt.silenced)
			}
			var meta []policy.Finding
			for _, f := range r.Findings {
				if strings.HasPrefix(f.Object, "waiver[") {
					meta = append(meta, f)
				}
			}
			switch {
			case tt.meta == "" && len(meta) > 0:
				t.Errorf("unexpected %s: %s", meta[0].RuleID, meta[0].Message)
			case tt.meta != "" && (len(meta) != 1 || meta[0].RuleID != tt.meta):
				t.Errorf("meta findings %+v, want one %s", meta, tt.meta)
			case tt.meta != "" && !strings.Contains(meta[0].Message, tt.detail):
				t.Errorf("%s message %q lacks %q", tt.meta, meta[0].Message, tt.detail)
			case tt.meta != "" && meta[0].Src != p.Waivers[0].Src:
				t.Errorf("%s at %s, want the waiver's %s", tt.meta, meta[0].Src, p.Waivers[0].Src)
			}
			if got := len(r.Waived) + countRule(r.Findings, "PDK-306"); got != 2 {
				t.Errorf("PDK-306 findings: %d, want 2 in all", got)
			}
			// Expired, invalid and meta-rule waivers block; the rest do not.
			wantBlocking := countRule(r.Findings, "PDK-306") > 0 || tt.state == policy.WaiverInvalid || tt.state == policy.WaiverExpired
			if r.Blocking() != wantBlocking {
				t.Errorf("Blocking() = %v, want %v", r.Blocking(), wantBlocking)
			}
		})
	}
}

func countRule(fs []policy.Finding, id string) int {
	n := 0
	for _, f := range fs {
		if f.RuleID == id {
			n++
		}
	}
	return n
}

// Two waivers of one rule: the first takes the findings, the second is unused.
func TestOverlappingWaivers(t *testing.T) {
	p := mustLoadSource(t, waiverHead+`
waiver {
  rule   = "PDK-306"
  reason = "all"
}
waiver {
  rule   = "PDK-306"
  scope  = "tenant.a.template.y"
  reason = "one"
}
`)
	r := policy.Check(p, testNow)
	if r.Waivers[0].Silenced != 2 || r.Waivers[1].State != policy.WaiverUnused {
		t.Errorf("waivers: %+v", r.Waivers)
	}
	if countRule(r.Findings, "PDK-003") != 1 || !strings.Contains(fmt.Sprint(r.Findings), "already silenced by an earlier waiver") {
		t.Errorf("findings: %+v", r.Findings)
	}
}

// A sensitive value never reaches a finding.
func TestFindingsRedactSensitiveValues(t *testing.T) {
	l := schemas.NewLoader()
	p, diags := l.LoadSource("spec.hcl", []byte(`
variable "image" {
  type      = string
  sensitive = true
}
platform { name = "s" }
target "local" {}
agent_sandbox { version = "v0.5.6" }
tenant "a" {
  template "x" { image = var.image }
}
`), schemas.LoadOptions{Vars: map[string]string{"image": "registry.internal/secret-project/agent"}, Environ: []string{}})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	r := policy.Check(p, testNow)
	var out bytes.Buffer
	if err := r.WriteText(&out, policy.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := policy.WriteJSON(&out, r, nil); err != nil {
		t.Fatal(err)
	}
	if err := policy.WriteSARIF(&out, r, nil, "test"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "secret-project") {
		t.Errorf("sensitive value in the report:\n%s", out.String())
	}
	if countRule(r.Findings, "PDK-404") != 1 || !strings.Contains(out.String(), "(sensitive value)") {
		t.Errorf("want a redacted PDK-404 finding, got:\n%s", out.String())
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run with -update if intended):\n%s", path, got)
	}
}

// The text report of the insecure example, pinned.
func TestInsecureReportGolden(t *testing.T) {
	r := policy.Check(mustLoad(t, insecureDir), testNow)
	var b strings.Builder
	if err := r.WriteText(&b, policy.TextOptions{Verbose: true}); err != nil {
		t.Fatal(err)
	}
	golden(t, "insecure.txt.golden", b.String())
}

func TestWriteRules(t *testing.T) {
	var b strings.Builder
	if err := policy.WriteRules(&b, false); err != nil {
		t.Fatal(err)
	}
	for _, r := range policy.Rules() {
		if !strings.Contains(b.String(), r.ID+" ") {
			t.Errorf("rule table lacks %s", r.ID)
		}
	}
	golden(t, "rules.txt.golden", b.String())
}

func TestJSON(t *testing.T) {
	r := policy.Check(mustLoad(t, insecureDir), testNow)
	var b bytes.Buffer
	spec := []policy.SpecDiagnostic{{Severity: policy.Warning, Summary: "Value for undeclared variable", Src: model.Range{Filename: "x.pvars.hcl", Line: 1, Column: 1}}}
	if err := policy.WriteJSON(&b, r, spec); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Valid       bool
		Blocking    bool
		Summary     map[string]int
		Diagnostics []map[string]any
		Findings    []struct {
			Rule     string
			Severity string
			Object   string
			Location struct {
				File   string
				Line   int
				Column int
			}
		}
		Waived  []struct{ Waiver struct{ Rule, Reason string } }
		Waivers []struct {
			Rule, State string
			Silenced    int
		}
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Valid || !doc.Blocking || len(doc.Findings) != len(r.Findings) || len(doc.Waived) != len(r.Waived) || len(doc.Waivers) != len(r.Waivers) || len(doc.Diagnostics) != 1 {
		t.Errorf("document: %+v", doc)
	}
	if doc.Summary["errors"] != r.Count(policy.Error) || doc.Summary["waived"] != len(r.Waived) {
		t.Errorf("summary: %v", doc.Summary)
	}
	f := doc.Findings[0]
	if f.Rule == "" || f.Severity == "" || f.Object == "" || f.Location.File == "" || f.Location.Line == 0 {
		t.Errorf("finding: %+v", f)
	}
	if doc.Waived[0].Waiver.Reason == "" {
		t.Errorf("waived finding lacks its waiver: %+v", doc.Waived[0])
	}

	// A spec that does not load: diagnostics only, not valid.
	b.Reset()
	if err := policy.WriteJSON(&b, nil, []policy.SpecDiagnostic{{Severity: policy.Error, Summary: "Bad"}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"valid": false`) || !strings.Contains(b.String(), `"spec_errors": 1`) {
		t.Errorf("json:\n%s", b.String())
	}
}

func TestSARIF(t *testing.T) {
	r := policy.Check(mustLoad(t, insecureDir), testNow)
	var b bytes.Buffer
	spec := []policy.SpecDiagnostic{{Severity: policy.Error, Summary: "Unsupported argument", Detail: "x", Src: model.Range{Filename: "/abs/spec.hcl", Line: 3, Column: 2}}}
	if err := policy.WriteSARIF(&b, r, spec, "v1.2.3"); err != nil {
		t.Fatal(err)
	}
	var log struct {
		Schema  string `json:"$schema"`
		Version string
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name, Version string
					Rules         []struct {
						ID                   string
						DefaultConfiguration struct{ Level string }
					}
				}
			}
			Results []struct {
				RuleID    string
				RuleIndex int
				Level     string
				Message   struct{ Text string }
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI string }
						Region           struct{ StartLine, StartColumn int }
					}
				}
				Suppressions []struct{ Kind, Status, Justification string }
			}
		}
	}
	if err := json.Unmarshal(b.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	if log.Version != "2.1.0" || !strings.Contains(log.Schema, "sarif-2.1.0") || len(log.Runs) != 1 {
		t.Fatalf("log: %s %s %d runs", log.Version, log.Schema, len(log.Runs))
	}
	run := log.Runs[0]
	if run.Tool.Driver.Name != "paddock" || run.Tool.Driver.Version != "v1.2.3" || len(run.Tool.Driver.Rules) != len(policy.Rules()) {
		t.Errorf("driver: %+v", run.Tool.Driver)
	}
	if got, want := len(run.Results), len(r.Findings)+len(r.Waived)+1; got != want {
		t.Errorf("%d results, want %d", got, want)
	}
	suppressed := 0
	for _, res := range run.Results {
		if run.Tool.Driver.Rules[res.RuleIndex].ID != res.RuleID {
			t.Errorf("result %s has ruleIndex %d", res.RuleID, res.RuleIndex)
		}
		if len(res.Locations) != 1 || res.Locations[0].PhysicalLocation.Region.StartLine == 0 {
			t.Errorf("result %s has no location", res.RuleID)
		}
		if len(res.Suppressions) > 0 {
			suppressed++
			if s := res.Suppressions[0]; s.Kind != "inSource" || s.Status != "accepted" || s.Justification == "" {
				t.Errorf("suppression: %+v", s)
			}
		}
	}
	if suppressed != len(r.Waived) {
		t.Errorf("%d suppressed results, want %d", suppressed, len(r.Waived))
	}
	first := run.Results[0]
	if first.RuleID != "PDK-000" || first.Locations[0].PhysicalLocation.ArtifactLocation.URI != "file:///abs/spec.hcl" {
		t.Errorf("spec diagnostic result: %+v", first)
	}
	if uri := run.Results[1].Locations[0].PhysicalLocation.ArtifactLocation.URI; uri != "../../examples/insecure/platform.hcl" {
		t.Errorf("relative uri = %q", uri)
	}
}

// BenchmarkValidate is `paddock validate` without the CLI: load (parse,
// decode, evaluate, build) and policy, on generated specs of 1k, 5k and 10k
// lines. Target: under 20 ms for 1,000 lines, linear as the spec grows.
func BenchmarkValidate(b *testing.B) {
	for _, n := range []int{1000, 5000, 10000} {
		spec, _ := specgen.OfLines(n)
		src := []byte(spec)
		b.Run(fmt.Sprintf("lines=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(src)))
			for i := 0; i < b.N; i++ {
				p, diags := schemas.LoadSource("bench.hcl", src, schemas.LoadOptions{Environ: []string{}})
				if p == nil {
					b.Fatal(diags)
				}
				if r := policy.Check(p, testNow); r.Blocking() {
					b.Fatal(r.Summary())
				}
			}
			b.ReportMetric(float64(bytes.Count(src, []byte("\n"))), "lines")
		})
	}
}

// BenchmarkCheck is policy alone, on the model of a 10k-line spec.
func BenchmarkCheck(b *testing.B) {
	spec, _ := specgen.OfLines(10000)
	p, diags := schemas.LoadSource("bench.hcl", []byte(spec), schemas.LoadOptions{Environ: []string{}})
	if p == nil {
		b.Fatal(diags)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		policy.Check(p, testNow)
	}
}
