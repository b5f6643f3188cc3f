package scaffold

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ExistsError is a repository not written because some of its files (or a
// directory on their path) already exist. Nothing was written.
type ExistsError struct {
	Dir string
	// Paths are the existing ones, slash-separated and relative to Dir.
	Paths []string
}

func (e *ExistsError) Error() string {
	return fmt.Sprintf("%s already holds %s: nothing was written (paddock init never overwrites a file; move them away or choose another directory)", e.Dir, strings.Join(e.Paths, ", "))
}

// Write writes files under dir (created if missing): directories 0755,
// files 0644 (less what the umask takes). It first checks every target, and
// writes nothing when any exists; a file that appears in between is still
// never overwritten (each is created exclusively), and on any error the
// files and directories this call made are removed again.
func Write(dir string, files []File) error {
	if info, err := os.Stat(dir); err == nil && !info.IsDir() {
		return fmt.Errorf("%s exists and is not a directory", dir)
	}
	if err := checkFree(dir, files); err != nil {
		return err
	}
	w := &writer{}
	if err := w.write(dir, files); err != nil {
		w.undo()
		return err
	}
	return nil
}

// checkFree reports every target that exists, and every directory on a
// target's path that exists as something other than a directory.
func checkFree(dir string, files []File) error {
	// isDir caches what each directory on the way is: true when files may
	// go below it.
	isDir := map[string]bool{}
	var taken []string
	for _, f := range files {
		parts := strings.Split(f.Path, "/")
		for i := range parts {
			rel := strings.Join(parts[:i+1], "/")
			p := filepath.Join(dir, filepath.FromSlash(rel))
			if i == len(parts)-1 {
				// Lstat: even a dangling symlink is something to overwrite.
				if _, err := os.Lstat(p); err == nil {
					taken = append(taken, rel)
				} else if !errors.Is(err, fs.ErrNotExist) {
					return err
				}
				break
			}
			ok, seen := isDir[rel]
			if !seen {
				info, err := os.Stat(p)
				switch {
				case errors.Is(err, fs.ErrNotExist):
				case err != nil:
					return err
				case info.IsDir():
					ok = true
				default:
					taken = append(taken, rel)
				}
				isDir[rel] = ok
			}
			if !ok {
				break
			}
		}
	}
	if len(taken) > 0 {
		return &ExistsError{Dir: dir, Paths: taken}
	}
	return nil
}

// writer remembers what it made, to undo a write that failed midway.
type writer struct {
	made []string // in creation order
}

func (w *writer) write(dir string, files []File) error {
	if err := w.mkdirAll(dir); err != nil {
		return err
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := w.mkdirAll(filepath.Dir(p)); err != nil {
			return err
		}
		out, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		w.made = append(w.made, p)
		_, werr := out.Write(f.Data)
		if cerr := out.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return fmt.Errorf("writing %s: %w", p, werr)
		}
	}
	return nil
}

// mkdirAll is os.MkdirAll that records each directory it creates.
func (w *writer) mkdirAll(p string) error {
	info, err := os.Stat(p)
	if err == nil {
		if !info.IsDir() {
			return fmt.Errorf("%s exists and is not a directory", p)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if parent := filepath.Dir(p); parent != p {
		if err := w.mkdirAll(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(p, 0o755); err != nil {
		return err
	}
	w.made = append(w.made, p)
	return nil
}

// undo removes what this writer made, newest first.
func (w *writer) undo() {
	for i := len(w.made) - 1; i >= 0; i-- {
		_ = os.Remove(w.made[i])
	}
}
