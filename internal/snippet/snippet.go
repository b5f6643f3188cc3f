// Package snippet clips a source line for a diagnostic, so that a line of
// megabytes prints as a few hundred characters around what the diagnostic
// points at.
package snippet

import "unicode/utf8"

// Width is the most characters (runes) of one source line a diagnostic
// prints: with its gutter ("  1234: ") the line fits the commands' 100
// columns (termtext.Width).
const Width = 88

// before is how many characters before the subject are kept when clipping.
const before = 30

// Clip returns the part of line to print around the bytes [start, end) and
// where those bytes are in it. The result is line itself when it is at most
// Width characters; otherwise a window of at most Width characters, cut on
// rune boundaries, with "…" where text was left out.
func Clip(line string, start, end int) (shown string, s, e int) {
	start = clamp(start, 0, len(line))
	end = clamp(end, start, len(line))
	if utf8.RuneCountInString(line) <= Width {
		return line, start, end
	}
	for start > 0 && !utf8.RuneStart(line[start]) {
		start--
	}
	// Walk back `before` runes from the subject, then forward Width runes
	// (less the ellipses' room) from there.
	from := start
	for i := 0; i < before && from > 0; i++ {
		_, size := utf8.DecodeLastRuneInString(line[:from])
		from -= size
	}
	room := Width - 2
	to := from
	for i := 0; i < room && to < len(line); i++ {
		_, size := utf8.DecodeRuneInString(line[to:])
		to += size
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
