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
