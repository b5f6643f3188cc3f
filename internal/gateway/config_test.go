package gateway

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestExampleConfigDecodes(t *testing.T) {
	c, err := LoadConfig(filepath.Join("testdata", "example.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Destinations) != 4 || c.Destinations[0].Port != 443 || c.Destinations[2].Port != 8443 {
		t.Errorf("destinations: %+v", c.Destinations)
	}
	if c.Destinations[1].Credential.Format != "{{key}}" {
		t.Errorf("format default: %q", c.Destinations[1].Credential.Format)
	}
	if c.Budgets.RequestsPerMinute != 120 || c.Identify.Mode != IdentifyPodAddress {
		t.Errorf("budgets or mode: %+v %+v", c.Budgets, c.Identify)
	}
	if time.Duration(c.Timeouts.ResponseHeader) != 10*time.Minute || time.Duration(c.Timeouts.Dial) != 10*time.Second {
		t.Errorf("timeouts: %+v", c.Timeouts)
	}
}

func TestDefaults(t *testing.T) {
	c, err := DecodeConfig(strings.NewReader(`{"listen":":8080","destinations":[{"host":"API.Example.com."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Destinations[0].Host != "api.example.com" || c.Destinations[0].Port != 443 {
		t.Errorf("destination: %+v", c.Destinations[0])
	}
	b := c.Budgets
	if b.RequestsPerMinute != DefaultRequestsPerMinute || b.MaxResponseBytes != DefaultMaxResponseBytes || b.Connections != DefaultConnections {
		t.Errorf("budget defaults: %+v", b)
	}
	if len(c.AllowCIDRs) != 0 {
		t.Errorf("the allow-list is off by default")
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{"listen":":1","destinations":[{"host":"a.test"}],"bogus":1}`, `unknown field "bogus"`},
		{`{"listen":":1","destinations":[{"host":"a.test","credential":{"header":"x","keyFile":"k","extra":1}}]}`, `unknown field "extra"`},
		{`{"listen":":1","destinations":[{"host":"a.test"}]} {}`, "data after"},
		{`{"destinations":[{"host":"a.test"}]}`, "listen: required"},
		{`{"listen":":1"}`, "at least one"},
		{`{"listen":":1","destinations":[{"host":"10.0.0.1"}]}`, "IP literal"},
		{`{"listen":":1","destinations":[{"host":"[::1]"}]}`, "IP literal"},
		{`{"listen":":1","destinations":[{"host":"*.example.com"}]}`, "not a DNS name"},
		{`{"listen":":1","destinations":[{"host":"a.test:443"}]}`, "not a DNS name"},
		{`{"listen":":1","destinations":[{"host":"a.test"},{"host":"A.test"}]}`, "already destinations[0]"},
		{`{"listen":":1","destinations":[{"host":"a.test","port":70000}]}`, "not a TCP port"},
		{`{"listen":":1","destinations":[{"host":"a.test","credential":{"header":"Bad Header","keyFile":"k"}}]}`, "not a header name"},
		{`{"listen":":1","destinations":[{"host":"a.test","credential":{"header":"Authorization","format":"Bearer","keyFile":"k"}}]}`, "must hold {{key}} once"},
		{`{"listen":":1","destinations":[{"host":"a.test","credential":{"header":"Authorization"}}]}`, "keyFile: required"},
		{`{"listen":":1","destinations":[{"host":"a.test","credential":{"keyFile":"k","basicAuth":{"userFile":"u","passwordFile":"p"}}}]}`, "basicAuth stands alone"},
		{`{"listen":":1","destinations":[{"host":"a.test"}],"budgets":{"requestsPerMinute":-1}}`, "budgets.requestsPerMinute: -1 is negative"},
		{`{"listen":":1","destinations":[{"host":"a.test"}],"identify":{"mode":"magic"}}`, `identify.mode: "magic"`},
		{`{"listen":":1","destinations":[{"host":"a.test"}],"identify":{"mode":"tokenReview"}}`, "audience: required"},
		{`{"listen":":1","destinations":[{"host":"a.test"}],"allowCIDRs":["0.0.0.0/0"]}`, "reopens every address"},
		{`{"listen":":1","destinations":[{"host":"a.test"}],"allowCIDRs":["127.0.0.1/8"]}`, "host bits set"},
		{`{"listen":":1","destinations":[{"host":"a.test"}],"cluster":{"podCIDRs":["10.0.0.5"]}}`, "not a CIDR"},
		{`{"listen":":1","destinations":[{"host":"a.test"}],"timeouts":{"dial":"soon"}}`, "invalid duration"},
	} {
		_, err := DecodeConfig(strings.NewReader(tc.json))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n got %v\nwant an error with %q", tc.json, err, tc.want)
		}
	}
	// Every problem is told at once.
	_, err := DecodeConfig(strings.NewReader(`{"destinations":[{"host":"10.0.0.1","port":-2}]}`))
	if err == nil || strings.Count(err.Error(), "\n") < 2 {
		t.Errorf("want three problems, got %v", err)
	}
}

func TestCredentialFileErrorsNameNoContent(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"short": "abc", "newline": "sk-abc\ndef-ghijkl", "empty": "  \n"} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o600)
		c := &Config{Listen: ":1", Destinations: []Destination{{Host: "a.test", Credential: &Credential{Header: "X-Key", KeyFile: p}}}}
		c.ApplyDefaults()
		_, err := New(c, Options{})
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s key file: %v, want an error naming the file", name, err)
		} else if strings.Contains(err.Error(), "def-ghijkl") {
			t.Errorf("the error quotes the key: %v", err)
		}
	}
	c := &Config{Listen: ":1", Destinations: []Destination{{Host: "a.test", Credential: &Credential{Header: "X-Key", KeyFile: filepath.Join(dir, "missing")}}}}
	c.ApplyDefaults()
	if _, err := New(c, Options{}); err == nil {
		t.Errorf("a missing key file was accepted")
	}
}

func TestNewAppliesDefaultsToItsCopy(t *testing.T) {
	c := &Config{Listen: ":1", Destinations: []Destination{{Host: "A.test"}}}
	g, err := New(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if g.cfg.Budgets.ConcurrentRequests != DefaultConcurrentRequests || g.dests["a.test"] == nil || g.dests["a.test"].port != 443 {
		t.Errorf("New did not apply the defaults: %+v %v", g.cfg.Budgets, g.dests)
	}
	if c.Budgets.ConcurrentRequests != 0 || c.Destinations[0].Host != "A.test" {
		t.Errorf("New changed the caller's configuration: %+v", c)
	}
}
