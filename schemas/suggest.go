package schemas

import (
	"fmt"
	"sort"
	"strings"

	"github.com/agext/levenshtein"
)

// didYouMean returns the candidate closest to given, or "" when none is close
// enough. It uses the same threshold as HCL's own suggestions for unknown
// blocks and arguments (an edit distance below 3), and also matches a
// candidate that differs only in case.
func didYouMean(given string, candidates []string) string {
	if given == "" {
		return ""
	}
	sorted := append([]string(nil), candidates...)
	sort.Strings(sorted)
	best, bestDist := "", 3
	for _, c := range sorted {
		if c == given {
			continue
		}
		if strings.EqualFold(c, given) {
			return c
		}
		if d := levenshtein.Distance(given, c, nil); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// didYouMeanSentence is " Did you mean \"x\"?" or "" (note the leading space).
func didYouMeanSentence(given string, candidates []string) string {
	if s := didYouMean(given, candidates); s != "" {
		return fmt.Sprintf(" Did you mean %q?", s)
	}
	return ""
}

// quotedList renders names as `"a", "b" and "c"` (sorted).
func quotedList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	sort.Strings(q)
	switch len(q) {
	case 0:
		return ""
	case 1:
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}
