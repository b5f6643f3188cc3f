package tools

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Outcome is what a fetch came to.
type Outcome int

const (
	Fetched     Outcome = iota // installed from the mirror
	Cached                     // already built here; the mirror was not asked
	NoBundle                   // the mirror holds no bundle for the key
	Refused                    // the mirror's bundle failed a check; nothing was installed
	Unavailable                // the mirror could not be read
)

// FetchResult is what Fetch did. Reason says, for NoBundle, Refused and
// Unavailable, why nothing was installed.
type FetchResult struct {
	Outcome Outcome
	Reason  string
	Files   int
	Bytes   int64
	Took    time.Duration
}

// FetchOptions configure Fetch.
type FetchOptions struct {
	Home     string // PADDOCK_HOME
	Platform string // default Platform()
	MaxBytes int64  // the most a bundle's files may hold; default DefaultMaxBundleBytes
}

// refusal is a bundle failing a check; File is the entry at fault, if one is.
type refusal struct {
	File   string
	Reason string
}

func (r *refusal) Error() string { return r.Reason }

func refuse(file, format string, args ...any) error {
	return &refusal{File: file, Reason: fmt.Sprintf(format, args...)}
}

// Fetch installs t's bundle from the mirror into home as build-tool.sh would
// have built it: $PADDOCK_HOME/tools/KEY with .complete, linked into
// $PADDOCK_HOME/bin. Every file is checked against the manifest while it is
// extracted into a private directory, which becomes the cache entry by one
// rename only when all of them passed: a refused or broken download leaves
// nothing behind.
func Fetch(ctx context.Context, m *Mirror, t Tool, o FetchOptions) FetchResult {
	start := time.Now()
	if o.Platform == "" {
		o.Platform = Platform()
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBundleBytes
	}
	res := fetch(ctx, m, t, o)
	res.Took = time.Since(start)
	return res
}

func fetch(ctx context.Context, m *Mirror, t Tool, o FetchOptions) FetchResult {
	if Built(o.Home, t) {
		return FetchResult{Outcome: Cached}
	}
	manifestRel, archiveRel := objectPaths(o.Platform, t.Key())
	noBundle := FetchResult{Outcome: NoBundle, Reason: fmt.Sprintf("no bundle for key %s (%s) on the mirror: no %s", t.Key(), o.Platform, m.where(manifestRel))}

	body, _, err := m.open(ctx, manifestRel)
	if errors.Is(err, errNoObject) {
		return noBundle
	}
	if err != nil {
		return FetchResult{Outcome: Unavailable, Reason: "mirror unavailable: " + err.Error()}
	}
	manifest, err := io.ReadAll(io.LimitReader(body, maxManifest+1))
	body.Close()
	if err != nil {
		return FetchResult{Outcome: Unavailable, Reason: fmt.Sprintf("mirror unavailable: reading %s: %v", m.where(manifestRel), err)}
	}
	if len(manifest) > maxManifest {
		return refused(fmt.Sprintf("%s is larger than %d bytes", manifestRel, maxManifest))
	}
	var man Manifest
	if err := decodeStrict(manifest, &man); err != nil {
		return refused(fmt.Sprintf("%s is not a manifest: %v", manifestRel, err))
	}
	if err := checkManifest(man, t, o.Platform, o.MaxBytes); err != nil {
		return refused(err.Error())
	}
	var total int64
	for _, f := range man.Files {
		total += f.Size
	}

	tools := filepath.Join(o.Home, "tools")
	if err := os.MkdirAll(tools, 0o755); err != nil {
		return FetchResult{Outcome: Unavailable, Reason: err.Error()}
	}
	removeStaleFetches(tools, t.Key())
	tmp := filepath.Join(tools, fmt.Sprintf(".fetch-%s-%d", t.Key(), os.Getpid()))
	if err := os.RemoveAll(tmp); err != nil {
		return FetchResult{Outcome: Unavailable, Reason: err.Error()}
	}
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return FetchResult{Outcome: Unavailable, Reason: err.Error()}
	}
	defer os.RemoveAll(tmp) // a no-op once tmp became the cache entry

	archive, _, err := m.open(ctx, archiveRel)
	if errors.Is(err, errNoObject) {
		noBundle.Reason = fmt.Sprintf("no bundle for key %s (%s) on the mirror: it has the manifest but no %s", t.Key(), o.Platform, m.where(archiveRel))
		return noBundle
	}
	if err != nil {
		return FetchResult{Outcome: Unavailable, Reason: "mirror unavailable: " + err.Error()}
	}
	err = extract(archive, manifest, man, tmp, total)
	archive.Close()
	if err != nil {
		var r *refusal
		if errors.As(err, &r) {
			return refused(r.Reason)
		}
		return refused(fmt.Sprintf("%s could not be read: %v", archiveRel, err))
	}
	if ctx.Err() != nil {
		return FetchResult{Outcome: Unavailable, Reason: ctx.Err().Error()}
	}
	if err := install(o.Home, tmp, t.Key()); err != nil {
		return FetchResult{Outcome: Unavailable, Reason: "installing: " + err.Error()}
	}
	return FetchResult{Outcome: Fetched, Files: len(man.Files), Bytes: total}
}

func refused(reason string) FetchResult {
	return FetchResult{Outcome: Refused, Reason: "bundle refused: " + reason}
}

func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the manifest")
	}
	return nil
}

// extract reads the archive as a stream into dir, holding every entry to the
// manifest: manifest.json first and equal to the one served beside the archive,
// then only listed paths, each once, of the listed kind and size, with the
// listed sha256 (checked as it is written). The stream is capped a little above
// what the manifest announces, so a server cannot feed it without end.
func extract(r io.Reader, manifest []byte, m Manifest, dir string, total int64) error {
	budget := total + maxManifest + int64(len(m.Files)+2)*entryOverhead
	gz, err := gzip.NewReader(&capped{r: r, left: budget + budget/64 + entryOverhead})
	if err != nil {
		return refuse("", "the archive is not gzip: %v", err)
	}
	plain := &capped{r: gz, left: budget}
	tr := tar.NewReader(plain)

	hdr, err := tr.Next()
	if err != nil {
		return refuse("", "the archive has no manifest: %v", err)
	}
	if hdr.Name != manifestName || hdr.Typeflag != tar.TypeReg || hdr.Size > maxManifest {
		return refuse(hdr.Name, "the archive starts with %q, not its manifest", hdr.Name)
	}
	inner, err := io.ReadAll(tr)
	if err != nil {
		return err
	}
	if !bytes.Equal(inner, manifest) {
		return refuse(manifestName, "the manifest inside the archive differs from the one beside it")
	}

	byPath := make(map[string]File, len(m.Files))
	for _, f := range m.Files {
		byPath[f.Path] = f
	}
	seen := make(map[string]bool, len(m.Files))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		// With GODEBUG=tarinsecurepath=0 the reader flags such names itself; the
		// check below refuses them either way, naming the entry.
		if err != nil && !(errors.Is(err, tar.ErrInsecurePath) && hdr != nil) {
			return err
		}
		name := hdr.Name
		if why := entryPathProblem(name); why != "" {
			return refuse(name, "entry %q %s", name, why)
		}
		f, ok := byPath[name]
		if !ok {
			return refuse(name, "entry %s is not in the manifest", name)
		}
		if seen[name] {
			return refuse(name, "entry %s appears twice", name)
		}
		seen[name] = true
		target := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if f.Link != "" {
			if hdr.Typeflag != tar.TypeSymlink || hdr.Linkname != f.Link {
				return refuse(name, "entry %s is not the symlink to %s the manifest lists", name, f.Link)
			}
			if err := os.Symlink(f.Link, target); err != nil {
				return err
			}
			continue
		}
		if hdr.Typeflag != tar.TypeReg {
			return refuse(name, "entry %s has tar type %q; the manifest lists a regular file", name, hdr.Typeflag)
		}
		if hdr.Size != f.Size {
			return refuse(name, "size of %s is %d bytes in the archive, %d in the manifest", name, hdr.Size, f.Size)
		}
		if err := writeChecked(tr, target, f); err != nil {
			return err
		}
	}
	for _, f := range m.Files {
		if !seen[f.Path] {
			return refuse(f.Path, "%s is in the manifest but not in the archive", f.Path)
		}
	}
	// Read to the end so gzip checks its own checksum and length.
	if _, err := io.Copy(io.Discard, plain); err != nil {
		return refuse("", "the archive is damaged after its last entry: %v", err)
	}
	return nil
}

func writeChecked(r io.Reader, target string, f File) error {
	mode, _ := strconv.ParseUint(f.Mode, 8, 32)
	// O_EXCL: never write through anything already at the path, a symlink least of all.
	out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), io.LimitReader(r, f.Size))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if n != f.Size {
		return refuse(f.Path, "%s is truncated (%d of %d bytes)", f.Path, n, f.Size)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != f.SHA256 {
		return refuse(f.Path, "sha256 of %s differs from its manifest (%s, manifest %s)", f.Path, got[:12], f.SHA256[:12])
	}
	return os.Chmod(target, os.FileMode(mode))
}

// capped reads at most left bytes and then fails, where io.LimitReader would
// end quietly and make an overlong stream look complete.
type capped struct {
	r    io.Reader
	left int64
}

var errTooLong = errors.New("the archive is longer than its manifest allows")

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		// One byte more tells an overlong stream from one that ends exactly here.
		var one [1]byte
		n, err := c.r.Read(one[:])
		if n > 0 {
			return 0, errTooLong
		}
		return 0, err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// install makes the checked directory tmp the cache entry KEY, whole, and links
// its bin/ into home/bin as build-tool.sh does.
func install(home, tmp, key string) error {
	if err := os.WriteFile(filepath.Join(tmp, completeMark), nil, 0o644); err != nil {
		return err
	}
	dest := filepath.Join(home, "tools", key)
	if _, err := os.Stat(filepath.Join(dest, completeMark)); err != nil {
		// An unfinished entry of an earlier attempt; build-tool.sh replaces it the same way.
		if err := os.RemoveAll(dest); err != nil {
			return err
		}
		if err := os.Rename(tmp, dest); err != nil {
			if _, serr := os.Stat(filepath.Join(dest, completeMark)); serr != nil {
				return err
			}
			// Another run finished the same key meanwhile: same key, same build.
		}
	}
	return link(home, dest)
}

// link points home/bin/NAME at every dest/bin/NAME, replacing each link by a rename.
func link(home, dest string) error {
	bin := filepath.Join(home, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(filepath.Join(dest, "bin"))
	if err != nil {
		return err
	}
	for _, e := range entries {
		tmp := filepath.Join(bin, fmt.Sprintf(".%s.link-%d", e.Name(), os.Getpid()))
		_ = os.Remove(tmp)
		if err := os.Symlink(filepath.Join(dest, "bin", e.Name()), tmp); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(bin, e.Name())); err != nil {
			_ = os.Remove(tmp)
			return err
		}
	}
	return nil
}

// removeStaleFetches deletes the private directories of fetches of key whose
// process is gone (a killed fetch runs no cleanup).
func removeStaleFetches(tools, key string) {
	prefix := ".fetch-" + key + "-"
	entries, _ := os.ReadDir(tools)
	for _, e := range entries {
		pidText, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 {
			continue
		}
		if pid != os.Getpid() && syscall.Kill(pid, 0) == syscall.ESRCH {
			_ = os.RemoveAll(filepath.Join(tools, e.Name()))
		}
	}
}

// Line is the line `make tools` prints for a fetch, INDEX/COUNT prefix and all.
func (r FetchResult) Line(t Tool, of string) string {
	if of != "" {
		of = "[" + of + "] "
	}
	switch r.Outcome {
	case Fetched:
		files := "1 file"
		if r.Files != 1 {
			files = fmt.Sprintf("%d files", r.Files)
		}
		return fmt.Sprintf("tools: %s%s %s fetched from mirror (%s, %s, sha256 verified) in %.1fs", of, t.Name, t.Version, files, humanBytes(r.Bytes), r.Took.Seconds())
	case Cached:
		return fmt.Sprintf("tools: %s%s %s (cached)", of, t.Name, t.Version)
	default:
		return fmt.Sprintf("tools: %s%s %s: %s; building from source", of, t.Name, t.Version, r.Reason)
	}
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return strconv.FormatInt(n, 10) + " B"
}
