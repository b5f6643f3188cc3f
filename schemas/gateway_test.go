package schemas

import (
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/paddock-platform/paddock/internal/model"
)

// gw wraps egress_gateway arguments into a tenant "t".
func gw(body string) string {
	return "tenant \"t\" {\n  egress_gateway {\n    " + body + "\n  }\n}\n"
}

// onTarget puts src on target kind (kubeconfig or gke) instead of local.
func onTarget(kind, src string) string {
	target := map[string]string{
		"kubeconfig": `target "kubeconfig" {}`,
		"gke":        "target \"gke\" {\n  project  = \"my-project\"\n  location = \"europe-west1\"\n}",
	}[kind]
	if kind == "gke" {
		src = strings.Replace(src, `handler = "runsc"`, `handler = "gvisor"`, 1)
	}
	return strings.Replace(src, `target "local" {}`, target, 1)
}

const pinnedGateway = `image = "registry.example.com/paddock-gateway@sha256:` +
	`0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"`

// Unset arguments take the gateway's own defaults; a credential defaults to
// the key "key" as a bearer token; a header other than Authorization takes
// the key alone; target local runs the gateway of this build.
func TestEgressGatewayDefaults(t *testing.T) {
	src := head + gw(`destination "api.anthropic.com" {
      credential {
        secret = "anthropic-key"
        header = "x-api-key"
      }
    }
    destination "api.openai.com" {
      credential { secret = "openai-key" }
    }
    destination "pypi.org" { port = 8443 }
    budgets {
      requests_per_minute = 120
      bytes_per_minute    = "64Mi"
      max_response_size   = "32Mi"
    }`)
	p := mustLoad(t, func(l *Loader) (*model.Platform, hcl.Diagnostics) {
		return l.LoadSource("spec.hcl", []byte(src), LoadOptions{Environ: []string{}})
	})
	g := p.Tenants[0].EgressGateway
	if g == nil {
		t.Fatal("no gateway in the model")
	}
	check(t, "image", g.Image, model.LocalGatewayImage())
	check(t, "replicas", g.Replicas, model.DefaultGatewayReplicas)
	var hosts []string
	for _, d := range g.Destinations {
		hosts = append(hosts, d.Host)
	}
	check(t, "hosts", hosts, []string{"api.anthropic.com", "api.openai.com", "pypi.org"})
	check(t, "ports", []int32{g.Destinations[0].Port, g.Destinations[2].Port}, []int32{443, 8443})
	a, o := g.Destinations[0].Credential, g.Destinations[1].Credential
	check(t, "x-api-key credential", []string{a.Secret, a.Key, a.Header, a.Format}, []string{"anthropic-key", "key", "x-api-key", "{{key}}"})
	check(t, "bearer credential", []string{o.Secret, o.Key, o.Header, o.Format}, []string{"openai-key", "key", "Authorization", "Bearer {{key}}"})
	if g.Destinations[2].Credential != nil {
		t.Error("a destination without a credential block got one")
	}
	want := model.DefaultEgressGateway().Budgets
	want.RequestsPerMinute, want.BytesPerMinute, want.MaxResponseBytes = 120, 64<<20, 32<<20
	got := g.Budgets
	got.Src, got.Attrs = model.Range{}, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("budgets = %+v, want %+v", got, want)
	}
	if p.Tenants[0].EgressGateway == nil || mustLoad(t, func(l *Loader) (*model.Platform, hcl.Diagnostics) {
		return l.LoadSource("spec.hcl", []byte(head+"tenant \"t\" {}\n"), LoadOptions{Environ: []string{}})
	}).Tenants[0].EgressGateway != nil {
		t.Error("a tenant without the block has a gateway")
	}
}

// On targets that do not build the gateway, the image is required and
// pinned by digest.
func TestEgressGatewayImagePinned(t *testing.T) {
	dest := "\n    destination \"pypi.org\" {}"
	for _, kind := range []string{"kubeconfig", "gke"} {
		p := mustLoad(t, func(l *Loader) (*model.Platform, hcl.Diagnostics) {
			return l.LoadSource("spec.hcl", []byte(onTarget(kind, head+gw(pinnedGateway+dest))), LoadOptions{Environ: []string{}})
		})
		if img := p.Tenants[0].EgressGateway.Image; !strings.Contains(img, "@sha256:") {
			t.Errorf("%s: image %q", kind, img)
		}
	}
}

func TestEgressGatewayErrors(t *testing.T) {
	dest := "\n    destination \"pypi.org\" {}"
	tests := []struct {
		name, src, summary, detail string
	}{
		{"ip literal", head + gw(`destination /*@*/"203.0.113.7" {}`), "Invalid destination host", "is an IP address"},
		{"ipv6 literal", head + gw(`destination /*@*/"[2001:db8::1]" {}`), "Invalid destination host", "is an IP address"},
		{"wildcard", head + gw(`destination /*@*/"*.example.com" {}`), "Invalid destination host", "is a wildcard"},
		{"url", head + gw(`destination /*@*/"https://api.example.com" {}`), "Invalid destination host", "without scheme, port or path"},
		{"upper case", head + gw(`destination /*@*/"API.example.com" {}`), "Invalid destination host", "lower case"},
		{"duplicate", head + gw("destination \"pypi.org\" {}\n    destination /*@*/\"pypi.org\" {}"), `Duplicate destination "pypi.org"`, "already declared"},
		{"no destination", head + "tenant \"t\" {\n  /*@*/egress_gateway {}\n}\n", "No destinations", "lists no destination"},
		{"port", head + gw(`destination "pypi.org" { port = /*@*/0 }`), "Value out of range", "must be between"},
		{"secret name", head + gw(`destination "pypi.org" {
      credential { secret = /*@*/"Anthropic_Key" }
    }`), "Invalid Secret name", "DNS-1123 label"},
		{"secret missing", head + gw(`destination "pypi.org" {
      /*@*/credential { header = "x-api-key" }
    }`), "Missing required argument", "needs the Secret holding the key"},
		{"header", head + gw(`destination "pypi.org" {
      credential {
        secret = "k"
        header = /*@*/"x api key"
      }
    }`), "Invalid header", "not an HTTP header name"},
		{"format without key", head + gw(`destination "pypi.org" {
      credential {
        secret = "k"
        format = /*@*/"Bearer"
      }
    }`), "Invalid format", "exactly once"},
		{"format control character", head + gw(`destination "pypi.org" {
      credential {
        secret = "k"
        format = /*@*/"{{key}}\r\nX-Evil: 1"
      }
    }`), "Invalid format", "control character"},
		{"budget zero", head + gw(`destination "pypi.org" {}
    budgets { requests_per_minute = /*@*/0 }`), "Value out of range", "must be between"},
		{"budget quantity zero", head + gw(`destination "pypi.org" {}
    budgets { max_request_size = /*@*/"0" }`), "Invalid budget", "more than 0"},
		{"budget quantity bad", head + gw(`destination "pypi.org" {}
    budgets { bytes_per_minute = /*@*/"lots" }`), "Invalid quantity", "not a Kubernetes quantity"},
		{"replicas", head + gw(`replicas = /*@*/0`+dest), "Value out of range", "must be between"},
		{"image missing on kubeconfig", onTarget("kubeconfig", head+"tenant \"t\" {\n  /*@*/egress_gateway {"+dest+"\n  }\n}\n"),
			"Missing required argument", "needs image on target \"kubeconfig\""},
		{"image by tag on gke", onTarget("gke", head+gw(`image = /*@*/"registry.example.com/paddock-gateway:1.0"`+dest)),
			"Gateway image not pinned by digest", "pinned by content"},
		{"allow_cidrs off local", onTarget("kubeconfig", head+gw(pinnedGateway+"\n    allow_cidrs = /*@*/[\"10.0.0.0/8\"]"+dest)),
			"allow_cidrs is for target local only", "Remove allow_cidrs"},
		{"allow_cidrs link-local", head + gw(`allow_cidrs = /*@*/["169.254.0.0/16"]`+dest), "Link-local range in allow_cidrs", "metadata server"},
		{"allow_cidrs everything", head + gw(`allow_cidrs = /*@*/["0.0.0.0/0"]`+dest), "Link-local range in allow_cidrs", ""},
		{"allow_cidrs host bits", head + gw(`allow_cidrs = /*@*/["10.215.0.1/24"]`+dest), "Invalid CIDR", "host bits"},
		{"ca bundle", head + gw(`ca_bundle = /*@*/"not pem"`+dest), "Invalid ca_bundle", "no PEM certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertDiagnosticAt(t, tt.src, tt.summary, tt.detail)
		})
	}
}
