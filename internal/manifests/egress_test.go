package manifests

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/internal/model"
)

// ControllerDefaultEgress mirrors the pinned controller: the address ranges
// of its buildDefaultNetworkPolicySpec are exactly ours, so policy judges the
// policy the controller really applies when a template carries none.
func TestControllerDefaultEgressMirrorsPinnedController(t *testing.T) {
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/agent-sandbox").Output()
	if err != nil {
		t.Fatalf("locate the agent-sandbox module: %v", err)
	}
	file := filepath.Join(strings.TrimSpace(string(dir)), "extensions", "controllers", "sandboxtemplate_controller.go")
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var theirs []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "buildDefaultNetworkPolicySpec" {
			continue
		}
		ast.Inspect(fn, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && strings.Contains(s, "/") {
					if _, err := model.ParseCIDR(s); err == nil {
						theirs = append(theirs, s)
					}
				}
			}
			return true
		})
	}
	var ours []string
	for _, r := range ControllerDefaultEgress() {
		if len(r.Ports) != 0 {
			t.Errorf("the controller's default opens every port, ours names %v", r.Ports)
		}
		for _, p := range r.To {
			ours = append(ours, p.IPBlock.CIDR)
			ours = append(ours, p.IPBlock.Except...)
		}
	}
	sort.Strings(theirs)
	sort.Strings(ours)
	if len(theirs) == 0 || !reflect.DeepEqual(theirs, ours) {
		t.Errorf("controller default ranges %v, ours %v", theirs, ours)
	}
}

// TenantEgress holds the very objects the tenant renders, and an origin
// for every rule Paddock writes.
func TestTenantEgressIsWhatRenders(t *testing.T) {
	p := &model.Platform{Name: "p", Target: model.Target{Kind: model.TargetLocal, FQDNPolicy: model.FQDNPolicyCilium}}
	tn := model.DefaultTenant("a")
	tn.Egress.FQDNs = []string{"api.example.com"}
	tn.Egress.Allows = []model.EgressAllow{{CIDR: "10.0.0.0/8", Ports: []int32{443}, Protocol: "TCP", Src: model.Range{Filename: "s.hcl", Line: 3, Column: 1}}}
	tn.Egress.Proxy = &model.EgressProxy{URL: "http://10.1.2.3:3128", Port: 3128, CIDR: "10.1.2.3/32", Src: model.Range{Filename: "s.hcl", Line: 5, Column: 1}}
	tpl := model.DefaultTemplate("t")
	tpl.Image = "r.example.com/a:1"
	tn.Templates = []model.Template{tpl}
	parts, err := Tenant(p, tn)
	if err != nil {
		t.Fatal(err)
	}
	view, err := TenantEgress(p, tn)
	if err != nil {
		t.Fatal(err)
	}
	all := parts.All()
	for _, u := range view.Objects {
		found := false
		for _, o := range all {
			found = found || reflect.DeepEqual(o, u)
		}
		if !found {
			t.Errorf("%s %s is not one of the tenant's objects", u.GetKind(), u.GetName())
		}
	}
	want := map[RuleRef]string{
		{"NetworkPolicy", "agents-a/allow-egress", 0}:       OriginAllow,
		{"NetworkPolicy", "agents-a/allow-egress-proxy", 0}: OriginProxy,
		{"SandboxTemplate", "agents-a/t", 0}:                OriginAllow,
		{"SandboxTemplate", "agents-a/t", 1}:                OriginProxy,
		{"CiliumNetworkPolicy", "agents-a/allow-fqdn", 0}:   OriginFQDNs,
		{"CiliumNetworkPolicy", "agents-a/allow-fqdn", 1}:   OriginFQDNs,
	}
	// The DNS rule is the CiliumNetworkPolicy's alone: an L4 allow of port 53
	// beside it would let the resolver answer every name.
	for _, u := range view.Objects {
		if u.GetKind() == "NetworkPolicy" && u.GetName() == AllowDNSPolicy {
			t.Errorf("NetworkPolicy %s renders beside the CiliumNetworkPolicy's DNS rule", AllowDNSPolicy)
		}
	}
	if _, ok := view.Origins[RuleRef{"SandboxTemplate", "agents-a/t", 2}]; ok {
		t.Error("the template's policy still holds a third rule (the L4 DNS allow)")
	}
	for ref, field := range want {
		if got := view.Origins[ref]; got.Field != field {
			t.Errorf("origin of %v: %+v, want %s", ref, got, field)
		}
	}
	if got := view.Origins[RuleRef{"NetworkPolicy", "agents-a/allow-egress", 0}].Src.String(); got != "s.hcl:3:1" {
		t.Errorf("allow origin at %s", got)
	}
}
