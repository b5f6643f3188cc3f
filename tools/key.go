package tools

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Source is a checkout's tool recipes: the build script and the tool modules it builds.
type Source struct {
	Root     string // the checkout: internal/pins/versions.env and tools/build-tool.sh
	ToolsDir string // the tool modules, Root/tools unless PADDOCK_TOOLS_SRC says otherwise
}

// FindSource returns the checkout at or above dir.
func FindSource(dir string) (Source, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return Source{}, err
	}
	for {
		if isFile(filepath.Join(d, "internal", "pins", "versions.env")) && isFile(filepath.Join(d, "tools", "build-tool.sh")) {
			return Source{Root: d, ToolsDir: filepath.Join(d, "tools")}, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return Source{}, fmt.Errorf("no paddock checkout at or above %s (looked for internal/pins/versions.env and tools/build-tool.sh); run this in the checkout", dir)
		}
		d = parent
	}
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// Tool is one pinned tool as this checkout builds it.
type Tool struct {
	Name       string
	Version    string
	RecipeHash string
}

// Key names the tool's build in the cache ($PADDOCK_HOME/tools/KEY) and on a
// mirror: a build from another version or another recipe has another key.
func (t Tool) Key() string { return t.Name + "-" + t.Version + "-" + t.RecipeHash }

var (
	// The pin line build-tool.sh reads: sed 's/^# pin: *\([A-Z0-9_]*\) *$/\1/p' | head -n 1.
	pinLine  = regexp.MustCompile(`(?m)^# pin: *([A-Z0-9_]*) *$`)
	toolName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
	// Keys become file names and URL path segments.
	safeKey = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)
)

// Tool returns the named tool with the version and recipe hash build-tool.sh
// gives it. The hash must stay the script's: sha256 over go.mod, go.sum, build.sh,
// the module's *.go files and build-tool.sh itself, first 12 hex digits
// (TestKeyIsTheBuildScriptsKey holds the two together).
func (s Source) Tool(name string) (Tool, error) {
	if !toolName.MatchString(name) {
		return Tool{}, fmt.Errorf("%q is not a tool name", name)
	}
	dir := filepath.Join(s.ToolsDir, name)
	recipe, err := os.ReadFile(filepath.Join(dir, "build.sh"))
	if err != nil {
		return Tool{}, fmt.Errorf("no recipe %s (each tool needs tools/NAME/build.sh)", filepath.Join(dir, "build.sh"))
	}
	m := pinLine.FindSubmatch(recipe)
	if m == nil || len(m[1]) == 0 {
		return Tool{}, fmt.Errorf("%s lacks a '# pin: VERSIONS_ENV_KEY' line", filepath.Join(dir, "build.sh"))
	}
	pin := string(m[1])
	versions, err := readVersions(filepath.Join(s.Root, "internal", "pins", "versions.env"))
	if err != nil {
		return Tool{}, err
	}
	version := versions[pin]
	if version == "" {
		return Tool{}, fmt.Errorf("%s pins %s, which internal/pins/versions.env does not set", filepath.Join(dir, "build.sh"), pin)
	}
	// ls sorts by the locale and Glob bytewise; they agree on the lower-case
	// file names the tool modules use.
	gofiles, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return Tool{}, err
	}
	sort.Strings(gofiles)
	parts := append([]string{filepath.Join(dir, "go.mod"), filepath.Join(dir, "go.sum"), filepath.Join(dir, "build.sh")}, gofiles...)
	parts = append(parts, filepath.Join(s.Root, "tools", "build-tool.sh"))
	h := sha256.New()
	for _, p := range parts {
		b, err := os.ReadFile(p)
		if err != nil {
			return Tool{}, fmt.Errorf("recipe hash of %s: %w", name, err)
		}
		h.Write(b)
	}
	t := Tool{Name: name, Version: version, RecipeHash: hex.EncodeToString(h.Sum(nil))[:12]}
	if !safeKey.MatchString(t.Key()) {
		return Tool{}, fmt.Errorf("tool %s: key %q has characters a file name or URL must not hold", name, t.Key())
	}
	return t, nil
}

// Tools returns every tool with a recipe (tools/NAME/build.sh), by name.
func (s Source) Tools() ([]Tool, error) {
	recipes, err := filepath.Glob(filepath.Join(s.ToolsDir, "*", "build.sh"))
	if err != nil {
		return nil, err
	}
	sort.Strings(recipes)
	var out []Tool
	for _, r := range recipes {
		t, err := s.Tool(filepath.Base(filepath.Dir(r)))
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no tool recipes under %s", s.ToolsDir)
	}
	return out, nil
}

// readVersions reads KEY=VALUE lines as build-tool.sh sources them (the file
// holds no quoting or expansion).
func readVersions(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m, nil
}

// Built reports whether home holds a finished build of t (build-tool.sh marks one
// with .complete, written last).
func Built(home string, t Tool) bool {
	_, err := os.Stat(filepath.Join(home, "tools", t.Key(), ".complete"))
	return err == nil
}

var errNotBuilt = errors.New("not built here")
