package snippet

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	short := `  image = "python"`
	if got, s, e := Clip(short, 10, 18); got != short || s != 10 || e != 18 {
		t.Errorf("a short line is kept whole: %q %d %d", got, s, e)
	}
	long := "  image = \"" + strings.Repeat("é", 3<<20) + "\" # the end"
	got, s, e := Clip(long, 2, len(long))
	if utf8.RuneCountInString(got) > Width || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") || !strings.HasPrefix(got[s:], "image") || e > len(got) {
		t.Errorf("clip of a 6 MB line: %d bytes, subject at %d..%d", len(got), s, e)
	}
	got, s, e = Clip(long, len(long)-5, len(long))
	if utf8.RuneCountInString(got) > Width || !strings.HasPrefix(got, "…") || got[s:e] != long[len(long)-5:] {
		t.Errorf("clip at the end: %q [%d:%d]", got, s, e)
	}
}
