package rules

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/paddock-platform/paddock/internal/gcpinputs"
)

func init() {
	register(Rule{
		ID: "GCP-014", Title: "Workload identity bindings",
		Hint: "Bind one Kubernetes service account (namespace/name) per identity and grant it only the predefined or custom roles it needs, never basic or IAM-admin roles.",
		check: func(p gcpinputs.PlatformArgs) []Violation {
			var out []Violation
			seenKSA := map[string]bool{}
			seenID := map[string]bool{}
			for _, wi := range p.WorkloadIdentities {
				addr := wiAddr(wi)
				if errs := validation.IsDNS1123Label(wi.Namespace); len(errs) > 0 {
					out = append(out, v(addr, "namespace", "namespace %q: %s", wi.Namespace, strings.Join(errs, "; ")))
				}
				if errs := validation.IsDNS1123Subdomain(wi.KSA); len(errs) > 0 {
					out = append(out, v(addr, "service_account", "service account %q: %s", wi.KSA, strings.Join(errs, "; ")))
				}
				if !saIDRE.MatchString(wi.AccountID) {
					out = append(out, v(addr, "account_id", "%q is not a Google service account id (6-30 characters, [a-z0-9-])", wi.AccountID))
				}
				if k := wi.Namespace + "/" + wi.KSA; seenKSA[k] {
					out = append(out, v(addr, "", "the service account %s is bound twice", k))
				} else {
					seenKSA[k] = true
				}
				if seenID[wi.AccountID] {
					out = append(out, v(addr, "account_id", "Google service account id %q is used by two identities", wi.AccountID))
				}
				seenID[wi.AccountID] = true
				if len(wi.Roles) == 0 {
					out = append(out, v(addr, "roles", "grants no role: an identity that needs no cloud access needs no Google service account"))
				}
				seenRole := map[string]bool{}
				for i, r := range wi.Roles {
					attr := fmt.Sprintf("roles[%d]", i)
					switch why, bad := forbiddenRoles[r]; {
					case !roleRE.MatchString(r):
						out = append(out, v(addr, attr, "%q is not an IAM role (roles/..., projects/P/roles/... or organizations/O/roles/...)", r))
					case bad:
						out = append(out, v(addr, attr, "%s may not be granted to a sandbox identity: %s", r, why))
					case seenRole[r]:
						out = append(out, v(addr, attr, "%s is listed twice", r))
					}
					seenRole[r] = true
				}
			}
			return out
		},
	})
}
