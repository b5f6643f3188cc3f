package schemas

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/mitchellh/go-wordwrap"

	"github.com/paddock-platform/paddock/internal/snippet"
	"github.com/paddock-platform/paddock/internal/termtext"
)

// detailWidth is the column at which diagnostic details are wrapped.
const detailWidth = 78

// maxSnippetLines bounds how much of a multi-line subject is printed.
const maxSnippetLines = 3

// WriteDiagnostics renders diags for a terminal, Terraform style:
//
//	Error: Unknown runtime class
//
//	  on specs/platform.hcl:21:21, in tenant "team-a" > template "python":
//	  21:     runtime_class = "gvsor"
//	                          ^^^^^^^
//
//	No runtime_class "gvsor" is declared. Did you mean "gvisor"? ...
//
// files supplies the source of snippets, by filename (Loader.Files, or
// hclparse.Parser.Files). A diagnostic about a file that is not in files (or
// files == nil) has its source read from disk, so callers of the
// package-level LoadDir can pass nil. Write errors are ignored: diagnostics
// go to a terminal or a buffer.
func WriteDiagnostics(w io.Writer, files map[string]*hcl.File, diags hcl.Diagnostics) {
	dw := &diagWriter{files: files, read: map[string]*hcl.File{}}
	bw := bufio.NewWriter(w)
	for _, d := range diags {
		if d != nil {
			dw.write(bw, d)
		}
	}
	_ = bw.Flush()
}

type diagWriter struct {
	files map[string]*hcl.File
	read  map[string]*hcl.File // read from disk on demand (nil: unreadable)
}

func (dw *diagWriter) file(name string) *hcl.File {
	if f, ok := dw.files[name]; ok && f != nil {
		return f
	}
	if f, ok := dw.read[name]; ok {
		return f
	}
	var f *hcl.File
	if src, d := readSpecFile(name, nil); d == nil {
		// The body names the blocks around a diagnostic; a file too deeply
		// nested to parse safely gets its snippet without them.
		if checkNesting(src, name, hcl.InitialPos, modeConfig) == nil {
			f, _ = hclsyntax.ParseConfig(src, name, hcl.InitialPos)
		}
		if f == nil {
			f = &hcl.File{Bytes: src}
		}
	}
	dw.read[name] = f
	return f
}

func (dw *diagWriter) write(w io.Writer, d *hcl.Diagnostic) {
	severity := "Error"
	if d.Severity == hcl.DiagWarning {
		severity = "Warning"
	}
	fmt.Fprintf(w, "%s: %s\n\n", severity, d.Summary)

	if s := d.Subject; s != nil {
		f := dw.file(s.Filename)
		where := pos(*s)
		if ctx := contextString(f, s.Start.Byte); ctx != "" {
			where += ", in " + ctx
		}
		fmt.Fprint(w, termtext.Wrap("on "+where+":", "  ", "    "))
		// Vars files hold values that may be secret: never print their lines.
		if f != nil && !strings.HasSuffix(s.Filename, VarsFileExt) {
			writeSnippet(w, f.Bytes, *s)
		}
		fmt.Fprintln(w)
	}
	if d.Detail != "" {
		fmt.Fprintf(w, "%s\n\n", wordwrap.WrapString(d.Detail, detailWidth))
	}
}

// writeSnippet prints the subject's lines, numbered, and underlines a
// single-line subject with carets.
func writeSnippet(w io.Writer, src []byte, s hcl.Range) {
	if len(src) == 0 || s.Start.Line < 1 || s.Start.Byte < 0 || s.Start.Byte > len(src) {
		return
	}
	last := s.End.Line
	if last < s.Start.Line {
		last = s.Start.Line
	}
	if last > s.Start.Line+maxSnippetLines-1 {
		last = s.Start.Line + maxSnippetLines - 1
	}
	width := len(fmt.Sprint(last))

	// The subject's first line starts after the last newline before it.
	lineStart := bytes.LastIndexByte(src[:s.Start.Byte], '\n') + 1
	rest := src[lineStart:]
	for n := s.Start.Line; n <= last; n++ {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		text := strings.TrimRight(string(line), "\r")
		startCol, endCol := 0, 0
		if n == s.Start.Line {
			startCol, endCol = s.Start.Byte-lineStart, s.End.Byte-lineStart
		}
		// A line can be megabytes long: print a window around the subject.
		text, startCol, endCol = snippet.Clip(text, startCol, endCol)
		fmt.Fprintf(w, "  %*d: %s\n", width, n, text)

		if n == s.Start.Line && s.End.Line == s.Start.Line {
			// Keep tabs so carets line up under tab-indented source.
			var pad strings.Builder
			for _, r := range text[:startCol] {
				if r == '\t' {
					pad.WriteByte('\t')
				} else {
					pad.WriteByte(' ')
				}
			}
			carets := utf8.RuneCountInString(text[startCol:max(startCol, endCol)])
			fmt.Fprintf(w, "  %*s  %s%s\n", width, "", pad.String(), strings.Repeat("^", max(1, carets)))
		}
		if rest == nil {
			break
		}
	}
}

// contextString names the blocks around offset: `tenant "team-a" > template
// "python"`. It returns "" for offsets outside any block.
func contextString(f *hcl.File, offset int) string {
	if f == nil {
		return ""
	}
	body, ok := f.Body.(*hclsyntax.Body)
	if !ok {
		return ""
	}
	var parts []string
	for body != nil {
		var inner *hclsyntax.Body
		for _, b := range body.Blocks {
			if b.Range().ContainsOffset(offset) {
				head := b.Type
				for _, l := range b.Labels {
					head += fmt.Sprintf(" %q", l)
				}
				parts = append(parts, head)
				inner = b.Body
				break
			}
		}
		body = inner
	}
	return strings.Join(parts, " > ")
}

// sortDiagnostics orders diags by file and position; diagnostics without a
// range (about the inputs themselves) come first. The sort is stable.
func sortDiagnostics(diags hcl.Diagnostics) hcl.Diagnostics {
	sort.SliceStable(diags, func(i, j int) bool {
		a, b := diags[i].Subject, diags[j].Subject
		switch {
		case a == nil || b == nil:
			return a == nil && b != nil
		case a.Filename != b.Filename:
			return a.Filename < b.Filename
		}
		return a.Start.Byte < b.Start.Byte
	})
	return diags
}
