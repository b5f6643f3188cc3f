package policy

import (
	"strings"

	"github.com/paddock-platform/paddock/internal/model"
)

// clusterCredentialEnv are variables that hand a sandbox cluster or cloud
// credentials.
var clusterCredentialEnv = []string{
	"KUBECONFIG", "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CREDENTIALS", "CLOUDSDK_AUTH_ACCESS_TOKEN",
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
	"AZURE_CLIENT_SECRET", "AZURE_CLIENT_CERTIFICATE_PATH", "ARM_CLIENT_SECRET",
}

func init() {
	register(Rule{
		ID: "PDK-204", Title: "Cluster or cloud credentials given to sandboxes", Severity: Error, Kind: Static,
		Control:   "No kubeconfig, cloud key file or long-lived access key inside a sandbox: cloud access goes through an identity, never a file",
		Checklist: []string{"H7", "L4", "L7"},
		Fix:       "Remove the variable. Give the orchestrator or a tool gateway outside the sandbox the access, or use Workload Identity with a role scoped to the one resource the agent needs.",
		check: func(c *checker) {
			c.eachTemplate(func(t *model.Tenant, tpl *model.Template) {
				for i := range tpl.SecretEnv {
					se := &tpl.SecretEnv[i]
					lower := strings.ToLower(se.Secret)
					if contains(clusterCredentialEnv, se.Name) || strings.Contains(lower, "kubeconfig") || strings.Contains(lower, "service-account-key") || strings.Contains(lower, "sa-key") {
						c.report(templateAddr(t, tpl)+".secret_env."+se.Name, se.Src,
							"Template %q of tenant %q puts %s (from Secret %q) into its sandboxes: a manipulated agent holds a cluster or cloud credential.", tpl.Name, t.Name, se.Name, se.Secret)
					}
				}
				for n := range tpl.Env {
					if contains(clusterCredentialEnv, n) {
						c.report(templateAddr(t, tpl), tpl.Attrs.At("env", tpl.Src),
							"Template %q of tenant %q sets %s: a manipulated agent holds a cluster or cloud credential.", tpl.Name, t.Name, n)
					}
				}
			})
		},
	})
}
