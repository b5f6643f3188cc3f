package schemas

import (
	"fmt"
	"strconv"
)

// Limits are the bounds of the spec language, one sentence each, generated
// from the constants the loader enforces. `paddock schema` prints them, and
// the README's list of them is held to this text by a test.
func Limits() []string {
	return []string{
		fmt.Sprintf("A platform has at most %s tenants, however they are written (tenant blocks and for_each together).", thousands(MaxTenants)),
		fmt.Sprintf("range() makes at most %s numbers in one call, and %s in all the calls of one spec.", thousands(MaxRangeCall), thousands(MaxRangeTotal)),
		fmt.Sprintf("No function result or local value holds more than %s elements and characters.", thousands(maxValueSize)),
		fmt.Sprintf("A spec or vars file is a regular file of at most %d MiB; the files of one load hold at most %d MiB and %s tokens together.", MaxSpecFileSize>>20, MaxSpecSize>>20, thousands(MaxSpecTokens)),
		fmt.Sprintf("Expressions nest at most %d levels deep (brackets, braces, parentheses, strings, template directives) and chain at most %s operators.", MaxNesting, thousands(MaxOperatorChain)),
	}
}

// thousands writes n with comma separators ("10,000").
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
