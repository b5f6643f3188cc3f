package schemas

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
)

// Format returns src in canonical HCL layout (hclwrite.Format: indentation,
// aligned equals signs, spacing). A file that does not parse is not
// formatted: its syntax errors are returned instead, so a half-typed file is
// never mangled.
func Format(filename string, src []byte) ([]byte, hcl.Diagnostics) {
	if len(src) > MaxSpecFileSize {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Spec file too large",
			Detail:   fmt.Sprintf("%s is larger than %d MiB, the most Paddock reads from one spec or vars file.", filename, MaxSpecFileSize>>20),
			Subject:  &hcl.Range{Filename: filename, Start: hcl.InitialPos, End: hcl.InitialPos},
		}}
	}
	if d := checkNesting(src, filename, hcl.InitialPos, modeConfig); d != nil {
		return nil, hcl.Diagnostics{d}
	}
	if _, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos); diags.HasErrors() {
		return nil, diags
	}
	return hclwrite.Format(src), nil
}

// ReadSpecFile reads a spec or vars file as the loader does: a regular file
// of at most MaxSpecFileSize bytes, or a diagnostic saying why not.
func ReadSpecFile(name string) ([]byte, hcl.Diagnostics) {
	src, d := readSpecFile(name, nil)
	if d != nil {
		return nil, hcl.Diagnostics{d}
	}
	return src, nil
}

// FormatTargets expands paths into the files `paddock fmt` works on: a file
// as given, a directory's native-syntax spec and vars files (not recursive,
// hidden files and editor leftovers skipped, as when loading).
func FormatTargets(paths []string) ([]string, error) {
	if len(paths) == 0 {
		paths = []string{"."}
	}
	var out []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			out = append(out, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if !e.IsDir() && !strings.HasSuffix(e.Name(), SpecJSONFileExt) && (isSpecFile(e.Name()) || isVarsFile(e.Name())) {
				out = append(out, filepath.Join(p, e.Name()))
			}
		}
	}
	return out, nil
}

// isVarsFile selects *.pvars.hcl, skipping hidden files and editor leftovers.
func isVarsFile(name string) bool {
	return strings.HasSuffix(name, VarsFileExt) && !strings.HasPrefix(name, ".") && !strings.HasPrefix(name, "#")
}

// Diff is a unified diff of a and b, labelled with name ("" when equal).
func Diff(name string, a, b []byte) string {
	if bytes.Equal(a, b) {
		return ""
	}
	al, bl := splitLines(a), splitLines(b)
	ops := diffLines(al, bl)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s (formatted)\n", name, name)
	const context = 3
	for i := 0; i < len(ops); {
		// Find the next change.
		for i < len(ops) && ops[i].kind == ' ' {
			i++
		}
		if i == len(ops) {
			break
		}
		start := max(0, i-context)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*context {
				end = min(len(ops), end+context)
				break
			}
			end = run
		}
		aStart, bStart, aLen, bLen := ops[start].a, ops[start].b, 0, 0
		for _, op := range ops[start:end] {
			if op.kind != '+' {
				aLen++
			}
			if op.kind != '-' {
				bLen++
			}
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", aStart+1, aLen, bStart+1, bLen)
		for _, op := range ops[start:end] {
			out.WriteByte(op.kind)
			out.WriteString(op.text)
			out.WriteByte('\n')
		}
		i = end
	}
	return out.String()
}

func splitLines(b []byte) []string {
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// diffOp is one line of an edit script: ' ' kept, '-' removed, '+' added;
// a and b are the line's (or the next line's) index in each side.
type diffOp struct {
	kind byte
	text string
	a, b int
}

// diffLines is a Myers shortest edit script of a into b. Each step keeps
// only the diagonals it reached, so memory is O(D²) for D edits.
func diffLines(a, b []string) []diffOp {
	n, m := len(a), len(b)
	maxD := n + m
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	var trace [][]int // trace[d]: v[off-d-1 .. off+d+1] before step d
	for d := 0; d <= maxD; d++ {
		trace = append(trace, append([]int(nil), v[off-d-1:off+d+2]...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(trace, a, b)
			}
		}
	}
	return nil
}

func backtrack(trace [][]int, a, b []string) []diffOp {
	x, y := len(a), len(b)
	var rev []diffOp
	for d := len(trace) - 1; d > 0; d-- {
		at := func(k int) int { return trace[d][k+d+1] }
		k := x - y
		var prevK int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := at(prevK)
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			x--
			y--
			rev = append(rev, diffOp{' ', a[x], x, y})
		}
		if x == prevX {
			y--
			rev = append(rev, diffOp{'+', b[y], x, y})
		} else {
			x--
			rev = append(rev, diffOp{'-', a[x], x, y})
		}
	}
	for x > 0 && y > 0 {
		x--
		y--
		rev = append(rev, diffOp{' ', a[x], x, y})
	}
	ops := make([]diffOp, len(rev))
	for i := range rev {
		ops[i] = rev[len(rev)-1-i]
	}
	return ops
}
