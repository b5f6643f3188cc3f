// Package snippet clips a source line for a diagnostic, so that a line of
// megabytes prints as a few hundred characters around what the diagnostic
// points at.
package snippet

import "unicode/utf8"

// Width is the most bytes of one source line a diagnostic prints.
const Width = 200

// before is how much of the line before the subject is kept when clipping.
const before = 60

// Clip returns the part of line to print around the bytes [start, end) and
// where those bytes are in it. The result is line itself when it is at most
// Width bytes; otherwise a window of at most Width bytes, cut on rune
// boundaries, with "…" where text was left out.
func Clip(line string, start, end int) (shown string, s, e int) {
	start = clamp(start, 0, len(line))
	end = clamp(end, start, len(line))
	if len(line) <= Width {
		return line, start, end
	}
	from := max(0, start-before)
	for from > 0 && !utf8.RuneStart(line[from]) {
		from--
	}
	to := min(len(line), from+Width)
	for to < len(line) && !utf8.RuneStart(line[to]) {
		to--
	}
	shown = line[from:to]
	s, e = start-from, min(end, to)-from
	if from > 0 {
		shown = "…" + shown
		s, e = s+len("…"), e+len("…")
	}
	if to < len(line) {
		shown += "…"
	}
	return shown, s, max(s, e)
}

func clamp(v, lo, hi int) int {
	return min(max(v, lo), hi)
}
