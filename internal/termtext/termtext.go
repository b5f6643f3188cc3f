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

// Table lays rows out in columns two spaces apart, as tabwriter would, but
// never wider than Width: a last column that does not fit beside the others
// wraps onto lines indented to its column, or, where the other columns leave
// it less than a third of the width, onto lines of its own indented by four.
func Table(rows [][]string) string {
	widths := []int{}
	for _, r := range rows {
		for i, c := range r[:max(len(r)-1, 0)] {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		if len(r) == 0 {
			b.WriteString("\n")
			continue
		}
		var head strings.Builder
		for i, c := range r[:len(r)-1] {
			head.WriteString(c + strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+2))
		}
		prefix, last := head.String(), r[len(r)-1]
		switch {
		case last == "":
			b.WriteString(strings.TrimRight(prefix, " ") + "\n")
		case utf8.RuneCountInString(prefix)+utf8.RuneCountInString(last) <= Width, utf8.RuneCountInString(prefix) <= Width*2/3:
			b.WriteString(Wrap(last, prefix, strings.Repeat(" ", utf8.RuneCountInString(prefix))))
		default:
			b.WriteString(strings.TrimRight(prefix, " ") + "\n")
			b.WriteString(Wrap(last, "    ", "    "))
		}
	}
	return b.String()
}
