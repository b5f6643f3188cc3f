package schemas

import (
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/internal/pins"
)

// Both vendored releases load, each with the image that follows its version;
// the message for any other names them.
func TestAgentSandboxVersionIsAVendoredRelease(t *testing.T) {
	if len(pins.AgentSandboxReleases()) != 2 {
		t.Fatalf("vendored releases = %v, want the pinned and the previous one", pins.AgentSandboxReleases())
	}
	for _, v := range pins.AgentSandboxReleases() {
		src := strings.Replace(head, `version = "v0.5.6"`, `version = "`+v+`"`, 1)
		p, diags := LoadSource("spec.hcl", []byte(src), LoadOptions{Environ: []string{}})
		if diags.HasErrors() {
			t.Fatalf("%s: %s", v, diags.Error())
		}
		if p.AgentSandbox.Version != v || p.AgentSandbox.Image != pins.AgentSandboxImage+":"+v {
			t.Errorf("%s: version %q image %q", v, p.AgentSandbox.Version, p.AgentSandbox.Image)
		}
	}
	src := strings.Replace(head, `version = "v0.5.6"`, `version = "v0.5.4"`, 1)
	_, diags := LoadSource("spec.hcl", []byte(src), LoadOptions{Environ: []string{}})
	if !diags.HasErrors() {
		t.Fatal("v0.5.4 (not vendored) loaded")
	}
	d := diags[0]
	if d.Summary != "Unsupported agent_sandbox version" || d.Subject == nil || d.Subject.Start.Line != 3 || d.Subject.Start.Column != 27 {
		t.Errorf("diagnostic %q at %v, want Unsupported agent_sandbox version at spec.hcl:3:27", d.Summary, d.Subject)
	}
	for _, v := range pins.AgentSandboxReleases() {
		if !strings.Contains(d.Detail, `"`+v+`"`) {
			t.Errorf("detail does not name vendored release %s: %s", v, d.Detail)
		}
	}
}
