package model

import (
	"strings"

	"golang.org/x/net/publicsuffix"
)

// PublicSuffixWildcard reports whether an FQDN allow-list entry matches
// hosts anyone can register: "*" itself, or a wildcard "*.<suffix>" whose
// suffix is a public suffix ("*.co.uk", "*.com"). Both sections of the public
// suffix list count: the private one lists the platforms where anyone gets a
// subdomain of their own ("*.github.io", "*.s3.amazonaws.com",
// "*.appspot.com"), which is the same hole as a top-level domain for an agent
// that an attacker can steer. A suffix the list does not know counts when it
// is a single label ("*.internal", "*.local"): a wildcard over a whole
// top-level domain.
func PublicSuffixWildcard(name string) bool {
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	if name == "*" {
		return true
	}
	rest, ok := strings.CutPrefix(name, "*.")
	if !ok || rest == "" {
		return false
	}
	suffix, _ := publicsuffix.PublicSuffix(rest)
	return suffix == rest
}

// FQDNMatches reports whether the FQDN allow-list entry pattern ("api.example.com"
// or "*.example.com") lets the host name through, as Cilium's toFQDNs reads it:
// a name matches itself, and "*." stands for exactly one more label, so
// "*.example.com" matches "api.example.com" but neither "example.com" nor
// "a.b.example.com". With anyDepth, "*." stands for one or more labels, the
// wider reading, for the question "could some engine let this name through?".
// Case and a trailing dot do not count.
func FQDNMatches(pattern, name string, anyDepth bool) bool {
	pattern = strings.TrimSuffix(strings.ToLower(pattern), ".")
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	suffix, wild := strings.CutPrefix(pattern, "*.")
	if !wild {
		return pattern == name
	}
	label, ok := strings.CutSuffix(name, "."+suffix)
	if !ok || label == "" {
		return false
	}
	return anyDepth || !strings.Contains(label, ".")
}
