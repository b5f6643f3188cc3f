package refdoc

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// CLI renders cli.md: a summary table, then one section per command (depth
// first, in cobra's order), each with its usage, description, examples and
// flags, the inherited ones included.
func CLI(root *cobra.Command) []byte {
	var cmds []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Deprecated != "" {
			return
		}
		cmds = append(cmds, c)
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)

	var w bytes.Buffer
	w.WriteString(Header("CLI reference", "the `paddock` command tree (cmd/paddock)"))
	w.WriteString("`SPEC` is a directory of `.hcl` files (merged) or one file; default `.`.\n\n")
	w.WriteString("| command | what it does |\n|---|---|\n")
	for _, c := range cmds[1:] {
		fmt.Fprintf(&w, "| [`%s`](#%s) | %s |\n", c.CommandPath(), anchor(c), Cell(Escape(c.Short)))
	}
	w.WriteString("\n")
	for _, c := range cmds {
		fmt.Fprintf(&w, "<a id=\"%s\"></a>\n\n## %s\n\n", anchor(c), c.CommandPath())
		if c.Short != "" {
			fmt.Fprintf(&w, "%s.\n\n", strings.TrimSuffix(Escape(c.Short), "."))
		}
		if c.Runnable() {
			fmt.Fprintf(&w, "```\n%s\n```\n\n", c.UseLine())
		}
		if c.Long != "" {
			writeText(&w, c.Long)
		}
		if len(c.Aliases) > 0 {
			fmt.Fprintf(&w, "Aliases: %s.\n\n", "`"+strings.Join(c.Aliases, "`, `")+"`")
		}
		if c.Example != "" {
			fmt.Fprintf(&w, "Examples:\n\n```sh\n%s\n```\n\n", dedent(c.Example))
		}
		if subs := visible(c.Commands()); len(subs) > 0 {
			w.WriteString("Subcommands:")
			for i, s := range subs {
				sep := ","
				if i == 0 {
					sep = ""
				}
				fmt.Fprintf(&w, "%s [`%s`](#%s)", sep, s.Name(), anchor(s))
			}
			w.WriteString(".\n\n")
		}
		writeFlags(&w, "Flags", c.LocalFlags())
		writeFlags(&w, "Inherited flags", c.InheritedFlags())
	}
	return append(bytes.TrimRight(w.Bytes(), "\n"), '\n')
}

func anchor(c *cobra.Command) string { return strings.ReplaceAll(c.CommandPath(), " ", "-") }

func visible(cs []*cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, c := range cs {
		if !c.Hidden && c.Deprecated == "" {
			out = append(out, c)
		}
	}
	return out
}

func writeFlags(w *bytes.Buffer, title string, fs *pflag.FlagSet) {
	var rows []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" || f.Name == "help" {
			return
		}
		name := "`--" + f.Name + "`"
		if f.Shorthand != "" {
			name = "`-" + f.Shorthand + "`, " + name
		}
		def := f.DefValue
		switch {
		case def == "" || def == "[]":
			def = "—"
		default:
			def = "`" + def + "`"
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s |", name, f.Value.Type(), Cell(def), Cell(Escape(f.Usage))))
	})
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "%s:\n\n| flag | type | default | meaning |\n|---|---|---|---|\n%s\n\n", title, strings.Join(rows, "\n"))
}

// writeText writes a command's long description. Its paragraphs are prose
// wrapped for a terminal; a paragraph with indented lines is a listing and
// stays preformatted.
func writeText(w *bytes.Buffer, s string) {
	for _, para := range strings.Split(strings.TrimSpace(s), "\n\n") {
		indented := false
		for _, l := range strings.Split(para, "\n") {
			if strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") {
				indented = true
			}
		}
		if indented {
			fmt.Fprintf(w, "```text\n%s\n```\n\n", para)
			continue
		}
		fmt.Fprintf(w, "%s\n\n", Escape(para))
	}
}

// dedent removes the two spaces cobra's examples are indented by.
func dedent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "  ")
	}
	return strings.Join(lines, "\n")
}
