package model

import "testing"

func TestPublicSuffixWildcard(t *testing.T) {
	for name, want := range map[string]bool{
		"*":                  true,
		"*.co.uk":            true,  // ICANN section
		"*.com":              true,  // a top-level domain
		"*.github.io":        true,  // private section: anyone gets a subdomain
		"*.s3.amazonaws.com": true,  // private section
		"*.internal":         true,  // unknown to the list: a whole top-level domain
		"*.CO.UK.":           true,  // case and a trailing dot change nothing
		"*.example.co.uk":    false, // a registrable domain
		"*.openai.com":       false,
		"*.corp.internal":    false,
		"api.example.com":    false,
		"co.uk":              false, // one host, not a wildcard
	} {
		if got := PublicSuffixWildcard(name); got != want {
			t.Errorf("PublicSuffixWildcard(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestFQDNMatches(t *testing.T) {
	for _, c := range []struct {
		pattern, name      string
		oneLabel, anyDepth bool
	}{
		{"api.example.com", "api.example.com", true, true},
		{"api.example.com", "API.Example.com.", true, true},
		{"api.example.com", "x.api.example.com", false, false},
		{"api.example.com", "example.com", false, false},
		{"*.example.com", "api.example.com", true, true},
		{"*.example.com", "a.b.example.com", false, true},
		{"*.example.com", "example.com", false, false},
		{"*.example.com", "evilexample.com", false, false},
		{"*.example.com", "api.example.com.evil.test", false, false},
		{"*.paddock.test", "api.llm.paddock.test", false, true},
	} {
		if got := FQDNMatches(c.pattern, c.name, false); got != c.oneLabel {
			t.Errorf("FQDNMatches(%q, %q, one label) = %v, want %v", c.pattern, c.name, got, c.oneLabel)
		}
		if got := FQDNMatches(c.pattern, c.name, true); got != c.anyDepth {
			t.Errorf("FQDNMatches(%q, %q, any depth) = %v, want %v", c.pattern, c.name, got, c.anyDepth)
		}
	}
}
