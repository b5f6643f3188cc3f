package tools

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var fakeTool = Tool{Name: "fake", Version: "v1.2.3", RecipeHash: "0123456789ab"}

// builtHome is a PADDOCK_HOME holding a finished build of fakeTool: two
// executables, a symlink between them and a file beside bin/ (as gvisor keeps
// its patched source in src/).
func builtHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	dir := filepath.Join(home, "tools", fakeTool.Key())
	write(t, filepath.Join(dir, "bin", "fake"), "#!/bin/sh\necho fake\n", 0o755)
	write(t, filepath.Join(dir, "bin", "fake-helper"), "#!/bin/sh\necho helper\n", 0o755)
	write(t, filepath.Join(dir, "src", "patch.go"), "package patched\n", 0o644)
	if err := os.Symlink("fake", filepath.Join(dir, "bin", "fake-alias")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, completeMark), "", 0o644)
	return home
}

func write(t *testing.T, p, body string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// bundled writes fakeTool's bundle from a fresh built home into a fresh mirror directory.
func bundled(t *testing.T) string {
	t.Helper()
	mirror := t.TempDir()
	b, err := Bundle(builtHome(t), fakeTool, Platform(), mirror)
	if err != nil {
		t.Fatal(err)
	}
	if b.Files != 4 || b.Unchanged {
		t.Fatalf("bundle = %+v; want 4 files, newly written", b)
	}
	return mirror
}

// serve serves dir on loopback below /team-mirror/ and counts the requests per path.
func serve(t *testing.T, dir string) (*Mirror, map[string]int) {
	t.Helper()
	var mu sync.Mutex
	hits := map[string]int{}
	files := http.StripPrefix("/team-mirror", http.FileServer(http.Dir(dir)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	m, err := ParseMirror(srv.URL + "/team-mirror/")
	if err != nil {
		t.Fatal(err)
	}
	return m, hits
}

func archivePath(mirror string, tool Tool) string {
	_, a := objectPaths(Platform(), tool.Key())
	return filepath.Join(mirror, filepath.FromSlash(a))
}

func manifestPath(mirror string, tool Tool) string {
	m, _ := objectPaths(Platform(), tool.Key())
	return filepath.Join(mirror, filepath.FromSlash(m))
}

// nothingInstalled fails the test when home holds any part of fakeTool.
func nothingInstalled(t *testing.T, home string) {
	t.Helper()
	entries, _ := os.ReadDir(filepath.Join(home, "tools"))
	for _, e := range entries {
		t.Errorf("the refused bundle left %s in the tools cache", e.Name())
	}
	links, _ := os.ReadDir(filepath.Join(home, "bin"))
	for _, e := range links {
		t.Errorf("the refused bundle linked %s", e.Name())
	}
}

func TestFetchFromHTTPMirrorInstallsTheBuild(t *testing.T) {
	m, hits := serve(t, bundled(t))
	home := t.TempDir()

	res := Fetch(context.Background(), m, fakeTool, FetchOptions{Home: home})
	if res.Outcome != Fetched {
		t.Fatalf("outcome %d: %s", res.Outcome, res.Reason)
	}
	if res.Files != 4 {
		t.Errorf("fetched %d files, want 4", res.Files)
	}
	if line := res.Line(fakeTool, "1/10"); !strings.HasPrefix(line, "tools: [1/10] fake v1.2.3 fetched from mirror (4 files") {
		t.Errorf("line = %q", line)
	}
	manifestRel, archiveRel := objectPaths(Platform(), fakeTool.Key())
	if hits["/team-mirror/"+manifestRel] != 1 || hits["/team-mirror/"+archiveRel] != 1 {
		t.Errorf("requests = %v; want the manifest and the archive once each", hits)
	}

	dest := filepath.Join(home, "tools", fakeTool.Key())
	for p, want := range map[string]struct {
		body string
		mode os.FileMode
	}{
		"bin/fake":        {"#!/bin/sh\necho fake\n", 0o755},
		"bin/fake-helper": {"#!/bin/sh\necho helper\n", 0o755},
		"src/patch.go":    {"package patched\n", 0o644},
	} {
		fi, err := os.Lstat(filepath.Join(dest, p))
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		got, _ := os.ReadFile(filepath.Join(dest, p))
		if string(got) != want.body || fi.Mode().Perm() != want.mode {
			t.Errorf("%s = %q mode %o; want %q mode %o", p, got, fi.Mode().Perm(), want.body, want.mode)
		}
	}
	if target, err := os.Readlink(filepath.Join(dest, "bin", "fake-alias")); err != nil || target != "fake" {
		t.Errorf("bin/fake-alias -> %q (%v); want the symlink to fake", target, err)
	}
	if !Built(home, fakeTool) {
		t.Error("no .complete: build-tool.sh would rebuild the tool")
	}
	for _, name := range []string{"fake", "fake-helper", "fake-alias"} {
		target, err := os.Readlink(filepath.Join(home, "bin", name))
		if err != nil || target != filepath.Join(dest, "bin", name) {
			t.Errorf("bin/%s -> %q (%v); want %s", name, target, err, filepath.Join(dest, "bin", name))
		}
	}
	out, err := exec.Command(filepath.Join(home, "bin", "fake-alias")).Output()
	if err != nil || string(out) != "fake\n" {
		t.Errorf("running the fetched tool: %q, %v", out, err)
	}
	entries, _ := os.ReadDir(filepath.Join(home, "tools"))
	if len(entries) != 1 {
		t.Errorf("tools cache holds %d entries, want only %s", len(entries), fakeTool.Key())
	}

	again := Fetch(context.Background(), m, fakeTool, FetchOptions{Home: home})
	if again.Outcome != Cached || hits["/team-mirror/"+manifestRel] != 1 {
		t.Errorf("second fetch: outcome %d, %d manifest requests; want cached without asking the mirror", again.Outcome, hits["/team-mirror/"+manifestRel])
	}
}

// rewriteArchive rewrites a bundle's archive, letting edit change each entry's
// content; the manifests (inside and beside) stay as they were.
func rewriteArchive(t *testing.T, path string, edit func(name string, body []byte) []byte) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var buf bytes.Buffer
	ngz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(ngz)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		body = edit(hdr.Name, body)
		hdr.Size = int64(len(body))
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		tw.Write(body)
	}
	tw.Close()
	ngz.Close()
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestTamperedFileIsRefused(t *testing.T) {
	mirror := bundled(t)
	rewriteArchive(t, archivePath(mirror, fakeTool), func(name string, body []byte) []byte {
		if name == "bin/fake-helper" {
			body = bytes.Clone(body)
			body[len(body)-2] ^= 0x20 // one byte, same size
		}
		return body
	})
	m, _ := serve(t, mirror)
	home := t.TempDir()

	res := Fetch(context.Background(), m, fakeTool, FetchOptions{Home: home})
	if res.Outcome != Refused || !strings.Contains(res.Reason, "sha256 of bin/fake-helper differs from its manifest") {
		t.Fatalf("outcome %d, reason %q; want refused naming bin/fake-helper", res.Outcome, res.Reason)
	}
	line := res.Line(fakeTool, "2/10")
	if !strings.HasPrefix(line, "tools: [2/10] fake v1.2.3: bundle refused: sha256 of bin/fake-helper differs") || !strings.HasSuffix(line, "; building from source") {
		t.Errorf("line = %q", line)
	}
	nothingInstalled(t, home)
}

// A tampered file whose new sum was written into the manifest served beside the
// archive is refused too: the archive's own manifest no longer agrees.
func TestManifestEditedBesideTheArchiveIsRefused(t *testing.T) {
	mirror := bundled(t)
	evil := []byte("#!/bin/sh\necho evil\n")
	rewriteArchive(t, archivePath(mirror, fakeTool), func(name string, body []byte) []byte {
		if name == "bin/fake" {
			return evil
		}
		return body
	})
	var man Manifest
	b, _ := os.ReadFile(manifestPath(mirror, fakeTool))
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(evil)
	for i := range man.Files {
		if man.Files[i].Path == "bin/fake" {
			man.Files[i].SHA256, man.Files[i].Size = hex.EncodeToString(sum[:]), int64(len(evil))
		}
	}
	b, _ = json.MarshalIndent(man, "", "  ")
	write(t, manifestPath(mirror, fakeTool), string(b)+"\n", 0o644)
	m, _ := ParseMirror(mirror)
	home := t.TempDir()
	res := Fetch(context.Background(), m, fakeTool, FetchOptions{Home: home})
	if res.Outcome != Refused || !strings.Contains(res.Reason, "differs from the one beside it") {
		t.Fatalf("outcome %d, reason %q; want refused for disagreeing manifests", res.Outcome, res.Reason)
	}
	nothingInstalled(t, home)
}

func TestMissingBundleFallsBack(t *testing.T) {
	m, hits := serve(t, t.TempDir())
	home := t.TempDir()
	res := Fetch(context.Background(), m, fakeTool, FetchOptions{Home: home})
	if res.Outcome != NoBundle || !strings.Contains(res.Reason, "no bundle for key fake-v1.2.3-0123456789ab ("+Platform()+") on the mirror") {
		t.Fatalf("outcome %d, reason %q; want no bundle naming the key", res.Outcome, res.Reason)
	}
	if !strings.HasSuffix(res.Line(fakeTool, ""), "; building from source") {
		t.Errorf("line = %q", res.Line(fakeTool, ""))
	}
	if len(hits) != 1 {
		t.Errorf("requests %v; want only the manifest asked for", hits)
	}
	nothingInstalled(t, home)

	// Another recipe is another key: a bundle of it is never taken.
	mirror := bundled(t)
	other := fakeTool
	other.RecipeHash = "ba9876543210"
	dm, _ := ParseMirror(mirror)
	if res := Fetch(context.Background(), dm, other, FetchOptions{Home: home}); res.Outcome != NoBundle {
		t.Errorf("a bundle of another recipe: outcome %d (%s); want no bundle", res.Outcome, res.Reason)
	}
	nothingInstalled(t, home)
}

func TestDirectoryMirror(t *testing.T) {
	mirror := bundled(t)
	for _, loc := range []string{mirror, "file://" + mirror} {
		m, err := ParseMirror(loc)
		if err != nil {
			t.Fatal(err)
		}
		home := t.TempDir()
		if res := Fetch(context.Background(), m, fakeTool, FetchOptions{Home: home}); res.Outcome != Fetched {
			t.Errorf("%s: outcome %d: %s", loc, res.Outcome, res.Reason)
		}
		if !Built(home, fakeTool) {
			t.Errorf("%s: not installed", loc)
		}
	}
	m, _ := ParseMirror(filepath.Join(mirror, "nonexistent"))
	if res := Fetch(context.Background(), m, fakeTool, FetchOptions{Home: t.TempDir()}); res.Outcome != Unavailable || !strings.Contains(res.Reason, "does not exist") {
		t.Errorf("missing mirror directory: outcome %d, %q; want unavailable", res.Outcome, res.Reason)
	}
}

// crafted writes a mirror holding fakeTool under manifest man, with an archive
// of the manifest followed by entries.
type entry struct {
	hdr  tar.Header
	body string
}

func crafted(t *testing.T, man Manifest, entries []entry, trailingZeros int) *Mirror {
	t.Helper()
	mirror := t.TempDir()
	b, _ := json.MarshalIndent(man, "", "  ")
	b = append(b, '\n')
	write(t, manifestPath(mirror, fakeTool), string(b), 0o644)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	tw.WriteHeader(&tar.Header{Name: manifestName, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(b))})
	tw.Write(b)
	for _, e := range entries {
		h := e.hdr
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(e.body))
	}
	tw.Close()
	gz.Write(make([]byte, trailingZeros))
	gz.Close()
	write(t, archivePath(mirror, fakeTool), buf.String(), 0o644)
	m, err := ParseMirror(mirror)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func fileOf(p, body, mode string) File {
	sum := sha256.Sum256([]byte(body))
	return File{Path: p, Mode: mode, Size: int64(len(body)), SHA256: hex.EncodeToString(sum[:])}
}

func TestHostileArchivesAreRefused(t *testing.T) {
	const tool = "#!/bin/sh\n"
	good := Manifest{Format: bundleFormat, Tool: fakeTool.Name, Version: fakeTool.Version, RecipeHash: fakeTool.RecipeHash,
		Key: fakeTool.Key(), Platform: Platform(), Files: []File{fileOf("bin/fake", tool, "0755")}}
	reg := func(name, body string) entry {
		return entry{hdr: tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o755}, body: body}
	}
	withFiles := func(files ...File) Manifest { m := good; m.Files = files; return m }
	cases := []struct {
		name     string
		man      Manifest
		entries  []entry
		trailing int
		max      int64
		want     string
		escaped  string // a path, relative to the tools cache, that must not exist afterwards
	}{
		{name: "dot-dot entry", man: good, entries: []entry{reg("../evil", tool), reg("bin/fake", tool)}, want: `entry "../evil" points outside`, escaped: "evil"},
		{name: "dot-dot inside the path", man: good, entries: []entry{reg("bin/../../evil", tool)}, want: "points outside", escaped: "evil"},
		{name: "absolute entry", man: good, entries: []entry{reg("/tmp/paddock-evil", tool)}, want: "is an absolute path"},
		{name: "entry not in the manifest", man: good, entries: []entry{reg("bin/fake", tool), reg("bin/extra", tool)}, want: "bin/extra is not in the manifest"},
		{name: "symlink in place of a file", man: good, entries: []entry{{hdr: tar.Header{Name: "bin/fake", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}}}, want: "the manifest lists a regular file"},
		{name: "symlink entry not in the manifest", man: good, entries: []entry{reg("bin/fake", tool), {hdr: tar.Header{Name: "bin/esc", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}}}, want: "bin/esc is not in the manifest"},
		{name: "manifest symlink pointing outside", man: withFiles(fileOf("bin/fake", tool, "0755"), File{Path: "bin/out", Link: "../../../../etc"}),
			entries: []entry{reg("bin/fake", tool), {hdr: tar.Header{Name: "bin/out", Typeflag: tar.TypeSymlink, Linkname: "../../../../etc"}}}, want: "points outside the tool's directory"},
		{name: "manifest absolute symlink", man: withFiles(fileOf("bin/fake", tool, "0755"), File{Path: "bin/out", Link: "/etc"}), want: "points outside the tool's directory"},
		{name: "file under a symlink", man: withFiles(File{Path: "lib", Link: "bin"}, fileOf("lib/fake", tool, "0755"), fileOf("bin/fake", tool, "0755")), want: "lies under lib"},
		{name: "manifest traversal", man: withFiles(fileOf("bin/fake", tool, "0755"), fileOf("../x", tool, "0644")), want: "points outside"},
		{name: "setuid mode", man: withFiles(fileOf("bin/fake", tool, "4755")), want: "permission bits only"},
		{name: "size differs", man: good, entries: []entry{reg("bin/fake", tool+"x")}, want: "size of bin/fake is 11 bytes in the archive, 10 in the manifest"},
		{name: "missing entry", man: withFiles(fileOf("bin/fake", tool, "0755"), fileOf("bin/two", tool, "0755")), entries: []entry{reg("bin/fake", tool)}, want: "bin/two is in the manifest but not in the archive"},
		{name: "duplicate entry", man: good, entries: []entry{reg("bin/fake", tool), reg("bin/fake", tool)}, want: "appears twice"},
		{name: "hard link", man: good, entries: []entry{{hdr: tar.Header{Name: "bin/fake", Typeflag: tar.TypeLink, Linkname: "/etc/passwd"}}}, want: "has tar type"},
		{name: "bomb after the last entry", man: good, entries: []entry{reg("bin/fake", tool)}, trailing: 8 << 20, want: "longer than its manifest allows"},
		{name: "over the size limit", man: good, max: 4, want: "larger than the 4 bytes"},
		{name: "another tool's manifest", man: func() Manifest { m := good; m.Tool = "other"; return m }(), want: "manifest is for other"},
		{name: "another platform", man: func() Manifest { m := good; m.Platform = "plan9/mips"; return m }(), want: "platform plan9/mips"},
		{name: "no executable", man: withFiles(fileOf("bin/fake", tool, "0644")), want: "bin/fake is not executable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := crafted(t, c.man, c.entries, c.trailing)
			home := t.TempDir()
			res := Fetch(context.Background(), m, fakeTool, FetchOptions{Home: home, MaxBytes: c.max})
			if res.Outcome != Refused || !strings.Contains(res.Reason, c.want) {
				t.Fatalf("outcome %d, reason %q; want refused with %q", res.Outcome, res.Reason, c.want)
			}
			nothingInstalled(t, home)
			if c.escaped != "" {
				if _, err := os.Lstat(filepath.Join(home, "tools", c.escaped)); err == nil {
					t.Errorf("an entry was written outside the tool's directory: %s", c.escaped)
				}
			}
		})
	}
	// The crafted good case passes, so each refusal above is the named fault's.
	m := crafted(t, good, []entry{reg("bin/fake", tool)}, 0)
	if res := Fetch(context.Background(), m, fakeTool, FetchOptions{Home: t.TempDir()}); res.Outcome != Fetched {
		t.Fatalf("the untouched crafted bundle: outcome %d, %s", res.Outcome, res.Reason)
	}
}

func TestUnavailableMirrorFallsBack(t *testing.T) {
	forbidden := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusForbidden) }))
	defer forbidden.Close()
	m, _ := ParseMirror(forbidden.URL)
	if res := Fetch(context.Background(), m, fakeTool, FetchOptions{Home: t.TempDir()}); res.Outcome != Unavailable || !strings.Contains(res.Reason, "403") {
		t.Errorf("403: outcome %d, %q", res.Outcome, res.Reason)
	}
	gone := httptest.NewServer(http.NotFoundHandler())
	m, _ = ParseMirror("http://user:secret@" + strings.TrimPrefix(gone.URL, "http://") + "/?sig=token")
	gone.Close()
	res := Fetch(context.Background(), m, fakeTool, FetchOptions{Home: t.TempDir()})
	if res.Outcome != Unavailable {
		t.Errorf("closed server: outcome %d, %q; want unavailable", res.Outcome, res.Reason)
	}
	if strings.Contains(res.Reason, "secret") || strings.Contains(res.Reason, "token") || strings.Contains(m.String(), "secret") {
		t.Errorf("credentials in a message: %q / %s", res.Reason, m)
	}
}

func TestParseMirror(t *testing.T) {
	for _, bad := range []string{"", "s3://bucket/tools", "gs://bucket", "file://host/srv", "file:relative", "https:///nohost"} {
		if _, err := ParseMirror(bad); err == nil {
			t.Errorf("ParseMirror(%q) accepted it", bad)
		}
	}
	if _, err := ParseMirror("s3://bucket"); err == nil || !strings.Contains(err.Error(), "HTTPS endpoint") {
		t.Errorf("s3:// error should point to the HTTPS endpoint: %v", err)
	}
}

func TestBundleAgainIsUnchanged(t *testing.T) {
	home, mirror := builtHome(t), t.TempDir()
	first, err := Bundle(home, fakeTool, Platform(), mirror)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(first.Archive)
	second, err := Bundle(home, fakeTool, Platform(), mirror)
	if err != nil || !second.Unchanged {
		t.Fatalf("second bundle: %+v, %v; want unchanged", second, err)
	}
	// A changed build is bundled anew.
	write(t, filepath.Join(home, "tools", fakeTool.Key(), "bin", "fake"), "#!/bin/sh\necho new\n", 0o755)
	third, err := Bundle(home, fakeTool, Platform(), mirror)
	if err != nil || third.Unchanged {
		t.Fatalf("after a change: %+v, %v; want rewritten", third, err)
	}
	if b, _ := os.ReadFile(third.Archive); bytes.Equal(a, b) {
		t.Error("the archive was not rewritten")
	}
	if _, err := Bundle(t.TempDir(), fakeTool, Platform(), mirror); err == nil || !strings.Contains(err.Error(), "not built here") {
		t.Errorf("bundling from a home without the build: %v", err)
	}
}

func runBuildIn(t *testing.T, src, name, home string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", "build-tool.sh", name, "1/1")
	cmd.Env = append(os.Environ(), "PADDOCK_HOME="+home, "PADDOCK_TOOLS_SRC="+src, "PADDOCK_TOOLS_HEARTBEAT=1")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// The script path end to end with a fake recipe: build-tool.sh builds it, the
// build is bundled and served on loopback, a fetch into an empty home is what
// build-tool.sh then takes as its own cached build (same key, nothing rebuilt),
// and after a refused fetch build-tool.sh builds from source.
func TestFetchedBuildIsTheScriptsCache(t *testing.T) {
	src := fixture(t, "faketool", "module example.com/faketool\n\ngo 1.22\n", "",
		"echo 'step: build'\nprintf '#!/bin/sh\\necho built-by-recipe\\n' > \"$OUT/faketool\"; chmod +x \"$OUT/faketool\"\n")
	write(t, filepath.Join(src, "faketool", "main.go"), "package main\n", 0o644)
	write(t, filepath.Join(src, "faketool", "util.go"), "package main\n", 0o644)
	root, _ := filepath.Abs("..")
	tool, err := Source{Root: root, ToolsDir: src}.Tool("faketool")
	if err != nil {
		t.Fatal(err)
	}

	builder := t.TempDir()
	if out, err := runBuildIn(t, src, "faketool", builder); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	if !Built(builder, tool) {
		entries, _ := os.ReadDir(filepath.Join(builder, "tools"))
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("build-tool.sh cached the build as %v; the Go key is %s", names, tool.Key())
	}
	dir := t.TempDir()
	if _, err := Bundle(builder, tool, Platform(), dir); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	m, _ := ParseMirror(srv.URL)

	home := t.TempDir()
	if res := Fetch(context.Background(), m, tool, FetchOptions{Home: home}); res.Outcome != Fetched {
		t.Fatalf("fetch: %d %s", res.Outcome, res.Reason)
	}
	out, err := runBuildIn(t, src, "faketool", home)
	if err != nil || !strings.Contains(out, "faketool "+tool.Version+" (cached)") || strings.Contains(out, "building") {
		t.Fatalf("build-tool.sh after the fetch: %v\n%s\nwant it to take the fetched build as cached", err, out)
	}
	if got, err := exec.Command(filepath.Join(home, "bin", "faketool")).Output(); err != nil || string(got) != "built-by-recipe\n" {
		t.Errorf("the linked tool ran %q, %v", got, err)
	}

	_, archiveRel := objectPaths(Platform(), tool.Key())
	rewriteArchive(t, filepath.Join(dir, filepath.FromSlash(archiveRel)), func(name string, body []byte) []byte {
		if name == "bin/faketool" {
			body = bytes.ReplaceAll(body, []byte("recipe"), []byte("mirror"))
		}
		return body
	})
	fresh := t.TempDir()
	res := Fetch(context.Background(), m, tool, FetchOptions{Home: fresh})
	if res.Outcome != Refused || !strings.Contains(res.Reason, "sha256 of bin/faketool differs") {
		t.Fatalf("tampered: %d %s", res.Outcome, res.Reason)
	}
	out, err = runBuildIn(t, src, "faketool", fresh)
	if err != nil || !strings.Contains(out, "built faketool") {
		t.Fatalf("build-tool.sh after the refusal: %v\n%s", err, out)
	}
	if got, _ := exec.Command(filepath.Join(fresh, "bin", "faketool")).Output(); string(got) != "built-by-recipe\n" {
		t.Errorf("after the refusal the tool prints %q; want the recipe's build", got)
	}
}
