// Package termtext lays out text for people at a terminal: lines of at most
// Width columns, wrapped at spaces with an indent, a word longer than a line
// cut rather than let through.
package termtext

import (
	"strings"
	"unicode/utf8"
)

// Width is the widest line the commands write for people: a terminal's,
// with room.
const Width = 100

// Wrap lays text out in lines of at most Width columns (runes): the first
// after first, the rest after indent, each ending in a newline. Newlines in
// text are kept; runs of spaces inside a line are kept as written.
func Wrap(text, first, indent string) string {
	var b strings.Builder
	prefix := first
	emit := func(line string) {
		b.WriteString(prefix + strings.TrimRight(line, " ") + "\n")
		prefix = indent
	}
	room := func() int { return max(Width-utf8.RuneCountInString(prefix), 1) }
	for _, para := range strings.Split(text, "\n") {
		line := ""
		for _, word := range strings.SplitAfter(para, " ") {
			if line != "" && utf8.RuneCountInString(line)+utf8.RuneCountInString(strings.TrimRight(word, " ")) > room() {
				emit(line)
				line = ""
			}
			line += word
			// A word longer than a whole line is cut.
			for {
				r := []rune(strings.TrimRight(line, " "))
				n := room()
				if len(r) <= n {
					break
				}
				emit(string(r[:n]))
				line = string([]rune(line)[n:])
			}
		}
		emit(line)
	}
	return b.String()
}
