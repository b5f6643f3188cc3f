package policy

import (
	"regexp"
	"sort"
	"strings"

	"github.com/paddock-platform/paddock/internal/model"
)

var (
	// credentialNameRe matches environment variable names that hold secrets.
	credentialNameRe = regexp.MustCompile(`(?i)(^|_)(api_?key|secret|password|passwd|token|credentials?|private_?key|access_?key)($|_)`)
	// credentialValueRe matches well-known key formats.
	credentialValueRe = regexp.MustCompile(`^(sk-[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{20,}|xox[baprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{30,}|-----BEGIN)`)
	// envRefRe is a Kubernetes dependent environment variable reference,
	// $(NAME), which the kubelet expands from the container's other
	// variables; "$$(" is its escape for a literal "$(".
	envRefRe = regexp.MustCompile(`\$\$\(|\$\([A-Za-z_][A-Za-z0-9_.-]*\)`)
)

// literalParts are the parts of an env value that are written in the spec
// itself: what is left once the $(NAME) references are taken out. A value
// made only of references holds no literal; "$(X)sk-..." still holds the key.
func literalParts(v string) []string {
	var parts []string
	last := 0
	for _, m := range envRefRe.FindAllStringIndex(v, -1) {
		if v[m[0]:m[1]] == "$$(" {
			continue // an escaped "$(" is literal text
		}
		if m[0] > last {
			parts = append(parts, v[last:m[0]])
		}
		last = m[1]
	}
	if last < len(v) {
		parts = append(parts, v[last:])
	}
	return parts
}

func holdsCredential(name, v string) bool {
	parts := literalParts(v)
	if len(parts) == 0 {
		return false
	}
	if credentialNameRe.MatchString(name) {
		return true
	}
	for _, p := range append(parts, strings.Join(parts, "")) {
		if credentialValueRe.MatchString(strings.TrimSpace(p)) {
			return true
		}
	}
	return false
}

func init() {
	register(Rule{
		ID: "PDK-203", Title: "Credential in a plain environment variable", Severity: Error, Kind: Static,
		Control:   "Credentials live in namespace-scoped Secrets, never in the spec or the template",
		Checklist: []string{"H7", "H20", "L4"},
		Fix:       "Move the value into a Secret of the tenant's namespace and read it with a secret_env block.",
		check: func(c *checker) {
			c.eachTemplate(func(t *model.Tenant, tpl *model.Template) {
				names := make([]string, 0, len(tpl.Env))
				for n := range tpl.Env {
					names = append(names, n)
				}
				sort.Strings(names)
				for _, n := range names {
					if holdsCredential(n, tpl.Env[n]) {
						c.report(templateAddr(t, tpl), tpl.Attrs.At("env", tpl.Src),
							"Template %q of tenant %q sets %s in plain env: the value is in the spec, the template and every pod description.", tpl.Name, t.Name, n)
					}
				}
			})
		},
	})
}
