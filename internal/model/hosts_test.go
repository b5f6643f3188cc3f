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
