package schemas

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/distribution/reference"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Syntax checks of single values. Each returns "" when the value is fine, or a
// sentence saying what is wrong (it reads after the quoted value). They mirror
// the Kubernetes API validation of the field the value ends up in, so a spec
// that decodes is not rejected by the API server for its syntax later.

const dnsLabelMaxLength = 63

var (
	dnsLabelRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	// labelNameRe is the name part of a label key, and a label value.
	labelNameRe    = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)
	dnsSubdomainRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	// versionRe is a release tag: vMAJOR.MINOR.PATCH with an optional
	// pre-release suffix (v1.2.3-rc.1).
	versionRe = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)
	// dateRe is YYYY-MM-DD; time.Parse checks that the date exists.
	dateRe = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)
)

// dnsLabelProblem checks an RFC 1123 label (names of namespaces, runtime
// classes, tenants, templates, pools).
func dnsLabelProblem(s string) string {
	switch {
	case s == "":
		return "is empty."
	case len(s) > dnsLabelMaxLength:
		return fmt.Sprintf("is %d characters long, more than the %d allowed.", len(s), dnsLabelMaxLength)
	case !dnsLabelRe.MatchString(s):
		return "may only contain lower case letters, digits and '-', and must start and end with a letter or digit."
	}
	return ""
}

// suggestLabel turns s into the nearest valid DNS-1123 label ("" if there is
// none or s is already valid).
func suggestLabel(s string) string {
	if dnsLabelProblem(s) == "" {
		return ""
	}
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '-' || r == '_' || r == '.' || r == ' ' || r == '/':
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > dnsLabelMaxLength {
		out = strings.TrimRight(out[:dnsLabelMaxLength], "-")
	}
	if dnsLabelProblem(out) != "" {
		return ""
	}
	return out
}

// suggestLabelSentence is " Did you mean \"x\"?" for the nearest valid label, or "".
func suggestLabelSentence(s string) string {
	if l := suggestLabel(s); l != "" {
		return fmt.Sprintf(" Did you mean %q?", l)
	}
	return ""
}

// dnsSubdomainProblem checks an RFC 1123 subdomain (names of Secrets, storage
// classes).
func dnsSubdomainProblem(s string) string {
	switch {
	case s == "":
		return "is empty."
	case len(s) > 253:
		return "is longer than 253 characters."
	case !dnsSubdomainRe.MatchString(s):
		return "may only contain lower case letters, digits, '-' and '.', and must start and end with a letter or digit."
	}
	return ""
}

// labelKeyProblem checks a Kubernetes label key or taint key: an optional DNS
// subdomain prefix and "/", then a name of at most 63 characters.
func labelKeyProblem(s string) string {
	name := s
	if prefix, n, ok := strings.Cut(s, "/"); ok {
		if prefix == "" || len(prefix) > 253 || !dnsSubdomainRe.MatchString(prefix) {
			return fmt.Sprintf("has an invalid prefix %q: the part before '/' must be a lower case DNS subdomain such as \"example.com\".", prefix)
		}
		name = n
	}
	switch {
	case name == "":
		return "has an empty name."
	case len(name) > 63:
		return "has a name part longer than 63 characters."
	case !labelNameRe.MatchString(name):
		return "is not a valid key: the name part may only contain letters, digits, '-', '_' and '.', and must start and end with a letter or digit."
	}
	return ""
}

// labelValueProblem checks a Kubernetes label value (also a toleration value).
func labelValueProblem(s string) string {
	switch {
	case s == "":
		return ""
	case len(s) > 63:
		return "is longer than 63 characters."
	case !labelNameRe.MatchString(s):
		return "is not a valid label value: it may only contain letters, digits, '-', '_' and '.', and must start and end with a letter or digit."
	}
	return ""
}

// quantityProblem checks a Kubernetes resource quantity and returns it parsed.
func quantityProblem(s string) (resource.Quantity, string) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return q, "is not a Kubernetes quantity. Write a number with an optional suffix, such as 250m or 1 (CPU), 512Mi or 2Gi (memory and storage)."
	}
	if q.Sign() < 0 {
		return q, "is negative."
	}
	return q, ""
}

// maxImageRefLength bounds an image reference before it is parsed: a name of
// at most 255 characters (reference.NameTotalLengthMax), ":" and a tag of at
// most 128, "@" and a digest (sha512: 7 + 128).
const maxImageRefLength = reference.NameTotalLengthMax + 1 + 128 + 1 + 7 + 128

// imageProblem checks a container image reference with the reference grammar
// the kubelet and registries use (github.com/distribution/reference),
// including its length limits, so a reference that would only fail when a
// node pulls it is refused at its argument. Whether it is pinned is policy.
func imageProblem(s string) string {
	switch {
	case s == "":
		return "is empty."
	case len(s) > maxImageRefLength:
		return fmt.Sprintf("is %d characters long; an image reference has at most %d (a name of at most %d, a tag of at most 128 and a digest).",
			len(s), maxImageRefLength, reference.NameTotalLengthMax)
	case strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return "contains white space; an image reference is one word such as \"python:3.12-slim\"."
	}
	if _, err := reference.ParseNormalizedNamed(s); err != nil {
		return fmt.Sprintf("is not an image reference (%s). Write one such as \"registry.example.com/team/image:1.2.3\" or \"python:3.12-slim\".", err)
	}
	return ""
}

// clipValue is s for a message, cut to a readable length: a diagnostic
// quotes the value it is about, and a value can be megabytes long.
func clipValue(s string) string {
	const max = 80
	if len(s) <= max {
		return strconv.Quote(s)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d characters)", strconv.Quote(s[:cut]), len(s))
}
