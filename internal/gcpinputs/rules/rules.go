// Package rules validates the inputs of Paddock's GCP layer against what GCP
// and GKE actually accept or need: nested virtualisation only on machine series
// that have it, node images that support the pool's isolation, FQDN policy only
// with Dataplane V2, workload identities only with a workload pool, well-formed
// sinks, and so on. Each rule is a small pure function with a stable ID, in a
// file of its own (gcpNNN_*.go), and every violation names the offending field
// by its spec address ("node_pool.kata" + "machine_type"), so the policy and
// spec layers can point at the source.
//
// These are validity rules, not hardening findings: a violation is a
// configuration GKE would refuse or that would silently not do what it says.
// The package knows nothing of Pulumi or of the model.
package rules

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/paddock-platform/paddock/internal/gcpinputs"
)

// Violation is one broken rule.
type Violation struct {
	Rule string // the rule's ID ("GCP-010")
	// Object is the spec address of the block ("cluster", "node_pool.kata",
	// "audit_sink.audit", "workload_identity.agents-a/tool", "kata", "alerts",
	// "system_pool"), Attr the argument in it ("machine_type"; "" for the block).
	Object  string
	Attr    string
	Message string
	Hint    string
}

// Field is Object.Attr, the offending field.
func (v Violation) Field() string {
	if v.Attr == "" {
		return v.Object
	}
	return v.Object + "." + v.Attr
}

func (v Violation) Error() string {
	return fmt.Sprintf("%s: %s [%s]", v.Field(), v.Message, v.Rule)
}

// Rule is one validation rule.
type Rule struct {
	ID    string
	Title string
	Hint  string
	check func(p gcpinputs.PlatformArgs) []Violation
}

// Check runs the rule on defaulted args.
func (r Rule) Check(p gcpinputs.PlatformArgs) []Violation {
	vs := r.check(p)
	for i := range vs {
		vs[i].Rule = r.ID
		if vs[i].Hint == "" {
			vs[i].Hint = r.Hint
		}
	}
	return vs
}

// All are the rules, in ID order.
func All() []Rule {
	out := append([]Rule(nil), registry...)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Lookup returns the rule with the given ID.
func Lookup(id string) (Rule, bool) {
	for _, r := range registry {
		if r.ID == id {
			return r, true
		}
	}
	return Rule{}, false
}

// Validate applies the GCP layer's defaults to p and runs every rule.
func Validate(p gcpinputs.PlatformArgs) []Violation {
	d := p.WithDefaults()
	var out []Violation
	for _, r := range All() {
		out = append(out, r.Check(d)...)
	}
	return out
}

// Err joins violations into one error (nil for none).
func Err(vs []Violation) error {
	errs := make([]error, len(vs))
	for i, v := range vs {
		errs[i] = v
	}
	return errors.Join(errs...)
}

var registry []Rule

func register(r Rule) { registry = append(registry, r) }

func poolAddr(np gcpinputs.NodePoolArgs) string { return "node_pool." + np.Name }

// allPools are the system pool and the sandbox pools, with their addresses.
func allPools(p gcpinputs.PlatformArgs) []struct {
	addr string
	pool gcpinputs.NodePoolArgs
} {
	out := []struct {
		addr string
		pool gcpinputs.NodePoolArgs
	}{{"system_pool", p.SystemPool}}
	for _, np := range p.NodePools {
		out = append(out, struct {
			addr string
			pool gcpinputs.NodePoolArgs
		}{poolAddr(np), np})
	}
	return out
}

func v(object, attr, format string, args ...any) Violation {
	return Violation{Object: object, Attr: attr, Message: fmt.Sprintf(format, args...)}
}

// Machine series (the part of the machine type before the first "-").
func machineSeries(machineType string) string {
	if i := strings.IndexByte(machineType, '-'); i > 0 {
		return strings.ToLower(machineType[:i])
	}
	return strings.ToLower(machineType)
}

// NestedVirtSeries are the Compute Engine machine series Paddock accepts for
// KVM pools: Intel general-purpose and compute-optimised series with nested
// virtualisation. Compute Engine offers it only on Intel (Haswell or later),
// not on E2, AMD (N2D, C2D, C3D, T2D, ...), Arm (T2A, C4A) or memory-optimised
// series. Unlisted series are refused until verified.
var NestedVirtSeries = []string{"n1", "n2", "c2", "c3"}

// noNestedVirt explains the series known not to support it.
var noNestedVirt = map[string]string{
	"e2":  "E2 machines do not support nested virtualisation",
	"f1":  "shared-core machines do not support nested virtualisation",
	"g1":  "shared-core machines do not support nested virtualisation",
	"n2d": "AMD machines do not support nested virtualisation", "c2d": "AMD machines do not support nested virtualisation",
	"c3d": "AMD machines do not support nested virtualisation", "c4d": "AMD machines do not support nested virtualisation",
	"t2d": "AMD machines do not support nested virtualisation", "n4d": "AMD machines do not support nested virtualisation",
	"t2a": "Arm machines do not support nested virtualisation", "c4a": "Arm machines do not support nested virtualisation",
	"n4a": "Arm machines do not support nested virtualisation",
	"m1":  "memory-optimised machines do not support nested virtualisation", "m2": "memory-optimised machines do not support nested virtualisation",
	"m3": "memory-optimised machines do not support nested virtualisation", "m4": "memory-optimised machines do not support nested virtualisation",
	"x4": "memory-optimised machines do not support nested virtualisation",
}

// SupportsNestedVirtualization reports whether Paddock accepts the machine
// type for a KVM pool, and why not.
func SupportsNestedVirtualization(machineType string) (bool, string) {
	s := machineSeries(machineType)
	for _, ok := range NestedVirtSeries {
		if s == ok {
			return true, ""
		}
	}
	if why, known := noNestedVirt[s]; known {
		return false, why
	}
	return false, fmt.Sprintf("machine series %q is not known to support nested virtualisation", strings.ToUpper(s))
}

var (
	poolNameRE   = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$`)
	clusterRE    = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$`)
	projectRE    = regexp.MustCompile(`^[a-z][-a-z0-9]{4,28}[a-z0-9]$`)
	regionRE     = regexp.MustCompile(`^[a-z]+-[a-z]+[0-9]+$`)
	zoneRE       = regexp.MustCompile(`^[a-z]+-[a-z]+[0-9]+-[a-z]$`)
	saIDRE       = regexp.MustCompile(`^[a-z][-a-z0-9]{4,28}[a-z0-9]$`)
	roleRE       = regexp.MustCompile(`^(roles/[A-Za-z0-9_.]+|(projects|organizations)/[^/]+/roles/[A-Za-z0-9_.]+)$`)
	datasetRE    = regexp.MustCompile(`^[A-Za-z0-9_]+$`)
	bucketRE     = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{1,61}[a-z0-9]$`)
	topicRE      = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9\-_.~+%]{2,254}$`)
	sinkNameRE   = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)
	gcpLabelKey  = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)
	gcpLabelVal  = regexp.MustCompile(`^[a-z0-9_-]{0,63}$`)
	machineRE    = regexp.MustCompile(`^[a-z][a-z0-9]*-[a-z0-9-]+$`)
	validEffects = map[string]bool{gcpinputs.EffectNoSchedule: true, gcpinputs.EffectPreferNoSchedule: true, gcpinputs.EffectNoExecute: true}
)

// Roles a workload identity may never hold: basic roles grant everything in
// the project, and the others let the holder mint keys or tokens for (and so
// become) other service accounts or rewrite IAM.
var forbiddenRoles = map[string]string{
	"roles/owner":                           "a basic role grants nearly everything in the project",
	"roles/editor":                          "a basic role grants nearly everything in the project",
	"roles/viewer":                          "a basic role reads nearly everything in the project",
	"roles/iam.serviceAccountKeyAdmin":      "it creates service account keys; Paddock never issues key files",
	"roles/iam.serviceAccountTokenCreator":  "it mints tokens for other service accounts (impersonation)",
	"roles/iam.serviceAccountUser":          "it acts as other service accounts",
	"roles/iam.workloadIdentityUser":        "it lets the sandbox impersonate other service accounts",
	"roles/iam.serviceAccountAdmin":         "it administers service accounts, their IAM and keys",
	"roles/resourcemanager.projectIamAdmin": "it rewrites the project's IAM policy",
	"roles/iam.securityAdmin":               "it rewrites IAM policies",
	"roles/container.admin":                 "it administers the cluster the sandbox runs in",
	"roles/container.clusterAdmin":          "it administers the cluster the sandbox runs in",
}
