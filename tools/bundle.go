package tools

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// A bundle is one tool's build as a tar.gz: manifest.json first, then every file
// of $PADDOCK_HOME/tools/KEY (bin/ and whatever else its recipe left there). The
// same manifest is stored beside the archive as KEY.json, so a client learns
// whether the mirror holds its key, and what it would get, before downloading.
const (
	manifestName  = "manifest.json"
	bundleFormat  = 1
	maxManifest   = 1 << 20
	maxFiles      = 10000
	completeMark  = ".complete"
	archiveMTime  = 0 // entries carry no build time, so bundles of one build are byte-identical
	entryOverhead = 64 << 10
)

// DefaultMaxBundleBytes bounds the files of one bundle (the largest tool, the
// Kubernetes binaries, is about 400 MB).
const DefaultMaxBundleBytes int64 = 4 << 30

// Manifest describes one bundle.
type Manifest struct {
	Format     int    `json:"format"`
	Tool       string `json:"tool"`
	Version    string `json:"version"`
	RecipeHash string `json:"recipeHash"`
	Key        string `json:"key"`
	Platform   string `json:"platform"`
	Files      []File `json:"files"`
}

// File is one entry of a bundle: a regular file, or a symlink when Link is set.
type File struct {
	Path   string `json:"path"`
	Mode   string `json:"mode,omitempty"` // permission bits in octal, "0755"
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256,omitempty"`
	Link   string `json:"link,omitempty"` // relative, resolving inside the tool's directory
}

// Platform is the os/arch tools built on this machine run on.
func Platform() string { return runtime.GOOS + "/" + runtime.GOARCH }

// Bundled is what Bundle wrote.
type Bundled struct {
	Archive    string
	Files      int
	Bytes      int64 // the files, uncompressed
	Compressed int64
	Unchanged  bool // the output already held this very bundle
}

// Bundle writes the build of t in home to outDir/PLATFORM/KEY.tar.gz and
// KEY.json. An existing bundle with the same manifest is kept as it is.
func Bundle(home string, t Tool, platform, outDir string) (Bundled, error) {
	src := filepath.Join(home, "tools", t.Key())
	if !Built(home, t) {
		return Bundled{}, fmt.Errorf("%s %s: %w (no %s)", t.Name, t.Version, errNotBuilt, filepath.Join(src, completeMark))
	}
	m := Manifest{Format: bundleFormat, Tool: t.Name, Version: t.Version, RecipeHash: t.RecipeHash, Key: t.Key(), Platform: platform}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		rel = filepath.ToSlash(rel)
		if rel == "." || rel == completeMark || d.IsDir() {
			return nil
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if !linkInside(rel, target) {
				return fmt.Errorf("%s is a symlink to %s, outside the tool's directory", p, target)
			}
			m.Files = append(m.Files, File{Path: rel, Link: target})
		case d.Type().IsRegular():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			sum, n, err := hashFile(p)
			if err != nil {
				return err
			}
			m.Files = append(m.Files, File{Path: rel, Mode: fmt.Sprintf("%04o", fi.Mode().Perm()), Size: n, SHA256: sum})
		default:
			return fmt.Errorf("%s is neither a file nor a symlink; a bundle holds only those", p)
		}
		return nil
	})
	if err != nil {
		return Bundled{}, err
	}
	if err := checkManifest(m, t, platform, DefaultMaxBundleBytes); err != nil {
		return Bundled{}, fmt.Errorf("%s %s: the build in %s cannot be bundled: %v", t.Name, t.Version, src, err)
	}
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return Bundled{}, err
	}
	manifest = append(manifest, '\n')

	manifestRel, archiveRel := objectPaths(platform, t.Key())
	manifestPath, archivePath := filepath.Join(outDir, filepath.FromSlash(manifestRel)), filepath.Join(outDir, filepath.FromSlash(archiveRel))
	out := Bundled{Archive: archivePath, Files: len(m.Files)}
	for _, f := range m.Files {
		out.Bytes += f.Size
	}
	if old, err := os.ReadFile(manifestPath); err == nil && bytes.Equal(old, manifest) {
		if fi, err := os.Stat(archivePath); err == nil && fi.Mode().IsRegular() {
			out.Compressed, out.Unchanged = fi.Size(), true
			return out, nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(archivePath), 0o755); err != nil {
		return Bundled{}, err
	}
	n, err := writeArchive(src, m, manifest, archivePath)
	if err != nil {
		return Bundled{}, err
	}
	out.Compressed = n
	// The manifest last: a client that finds it finds its archive.
	if err := writeFileAtomic(manifestPath, manifest); err != nil {
		return Bundled{}, err
	}
	return out, nil
}

func writeArchive(src string, m Manifest, manifest []byte, dst string) (int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	gz := gzip.NewWriter(tmp)
	tw := tar.NewWriter(gz)
	mtime := time.Unix(archiveMTime, 0)
	if err := tw.WriteHeader(&tar.Header{Name: manifestName, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(manifest)), ModTime: mtime}); err != nil {
		return 0, err
	}
	if _, err := tw.Write(manifest); err != nil {
		return 0, err
	}
	for _, f := range m.Files {
		if f.Link != "" {
			if err := tw.WriteHeader(&tar.Header{Name: f.Path, Typeflag: tar.TypeSymlink, Linkname: f.Link, Mode: 0o777, ModTime: mtime}); err != nil {
				return 0, err
			}
			continue
		}
		mode, _ := strconv.ParseUint(f.Mode, 8, 32)
		if err := tw.WriteHeader(&tar.Header{Name: f.Path, Typeflag: tar.TypeReg, Mode: int64(mode), Size: f.Size, ModTime: mtime}); err != nil {
			return 0, err
		}
		if err := copyChecked(tw, filepath.Join(src, filepath.FromSlash(f.Path)), f); err != nil {
			return 0, err
		}
	}
	if err := tw.Close(); err != nil {
		return 0, err
	}
	if err := gz.Close(); err != nil {
		return 0, err
	}
	if err := tmp.Sync(); err != nil {
		return 0, err
	}
	fi, err := tmp.Stat()
	if err != nil {
		return 0, err
	}
	if err := tmp.Close(); err != nil {
		return 0, err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return 0, err
	}
	return fi.Size(), os.Rename(tmp.Name(), dst)
}

// copyChecked writes the file into the archive and fails if it is no longer
// what the manifest says (changed while being bundled).
func copyChecked(w io.Writer, p string, f File) error {
	r, err := os.Open(p)
	if err != nil {
		return err
	}
	defer r.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(r, f.Size))
	if err != nil {
		return err
	}
	if n != f.Size || hex.EncodeToString(h.Sum(nil)) != f.SHA256 {
		return fmt.Errorf("%s changed while it was being bundled", p)
	}
	return nil
}

func hashFile(p string) (string, int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

func writeFileAtomic(p string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p)
}

// entryPathProblem says what is wrong with a bundle entry's path, "" when nothing:
// it must be relative, clean, inside the tool's directory and not a name the
// bundle or the cache reserves.
func entryPathProblem(p string) string {
	switch {
	case p == "" || p == ".":
		return "is empty"
	case strings.HasPrefix(p, "/") || filepath.IsAbs(p) || filepath.VolumeName(p) != "":
		return "is an absolute path"
	case p == ".." || strings.HasPrefix(p, "../") || strings.Contains(p, "/../") || strings.HasSuffix(p, "/.."):
		return "points outside the tool's directory"
	case strings.Contains(p, "\\") || strings.ContainsRune(p, 0):
		return "holds a backslash or NUL"
	case path.Clean(p) != p:
		return "is not a clean path"
	case p == manifestName || p == completeMark:
		return "is a reserved name"
	}
	return ""
}

// linkInside reports whether a symlink at p (relative to the tool's directory)
// with the given target resolves inside that directory.
func linkInside(p, target string) bool {
	if target == "" || path.IsAbs(target) || filepath.IsAbs(target) || strings.ContainsRune(target, 0) {
		return false
	}
	r := path.Clean(path.Join(path.Dir(p), target))
	return r != "." && r != ".." && !strings.HasPrefix(r, "../")
}

// checkManifest holds a manifest to the tool it is taken for and to the shape
// of a build: known, unique, contained paths, well-formed sums, sizes within
// limits, and at least one executable in bin/ (as build-tool.sh requires).
func checkManifest(m Manifest, want Tool, platform string, maxBytes int64) error {
	if m.Format != bundleFormat {
		return fmt.Errorf("manifest format %d is not understood (this paddock reads format %d)", m.Format, bundleFormat)
	}
	got := Tool{Name: m.Tool, Version: m.Version, RecipeHash: m.RecipeHash}
	if got != want || m.Key != want.Key() {
		return fmt.Errorf("manifest is for %s %s recipe %s (key %s), not key %s", m.Tool, m.Version, m.RecipeHash, m.Key, want.Key())
	}
	if m.Platform != platform {
		return fmt.Errorf("manifest is for platform %s, not %s", m.Platform, platform)
	}
	if len(m.Files) == 0 || len(m.Files) > maxFiles {
		return fmt.Errorf("manifest lists %d files (1 to %d allowed)", len(m.Files), maxFiles)
	}
	kinds := map[string]bool{} // path -> is a symlink
	for _, f := range m.Files {
		if _, dup := kinds[f.Path]; dup {
			return fmt.Errorf("%s is listed twice", f.Path)
		}
		kinds[f.Path] = f.Link != ""
	}
	var total int64
	executable := false
	for _, f := range m.Files {
		if why := entryPathProblem(f.Path); why != "" {
			return fmt.Errorf("entry %q %s", f.Path, why)
		}
		for d := path.Dir(f.Path); d != "."; d = path.Dir(d) {
			if _, ok := kinds[d]; ok {
				return fmt.Errorf("entry %q lies under %s, which is not a directory", f.Path, d)
			}
		}
		if f.Link != "" {
			if !linkInside(f.Path, f.Link) {
				return fmt.Errorf("symlink %s -> %s points outside the tool's directory", f.Path, f.Link)
			}
			if f.Mode != "" || f.Size != 0 || f.SHA256 != "" {
				return fmt.Errorf("symlink %s carries a mode, size or sha256", f.Path)
			}
			continue
		}
		mode, err := strconv.ParseUint(f.Mode, 8, 32)
		if err != nil || len(f.Mode) != 4 || mode > 0o777 {
			return fmt.Errorf("%s has mode %q; want four octal digits, permission bits only", f.Path, f.Mode)
		}
		if len(f.SHA256) != 64 || strings.ToLower(f.SHA256) != f.SHA256 {
			return fmt.Errorf("%s has no well-formed sha256", f.Path)
		}
		if _, err := hex.DecodeString(f.SHA256); err != nil {
			return fmt.Errorf("%s has no well-formed sha256", f.Path)
		}
		if f.Size < 0 || f.Size > maxBytes-total {
			return fmt.Errorf("the files are larger than the %d bytes a bundle may hold", maxBytes)
		}
		total += f.Size
		if path.Dir(f.Path) == "bin" {
			if mode&0o111 == 0 {
				return fmt.Errorf("%s is not executable", f.Path)
			}
			executable = true
		}
	}
	if !executable {
		return fmt.Errorf("no executable in bin/")
	}
	return nil
}
