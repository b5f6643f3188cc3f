package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// Mirror is where bundles are fetched from (PADDOCK_TOOLS_MIRROR): an HTTP(S)
// server (an internal file server, an artifact repository, an object store's
// HTTPS endpoint) or a directory (a plain path or a file:// URL).
type Mirror struct {
	base   *url.URL // http and https mirrors
	dir    string   // directory mirrors
	client *http.Client
}

// errNoObject is a mirror's answer for an object it does not hold.
var errNoObject = errors.New("not on the mirror")

// ParseMirror reads a mirror location.
func ParseMirror(raw string) (*Mirror, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, errors.New("empty mirror location")
	}
	u, err := url.Parse(raw)
	if err != nil && strings.Contains(raw, "://") {
		return nil, fmt.Errorf("mirror %q: %v", redactRaw(raw), err)
	}
	if err != nil || u.Scheme == "" {
		abs, err := filepath.Abs(raw)
		if err != nil {
			return nil, err
		}
		return &Mirror{dir: abs}, nil
	}
	switch u.Scheme {
	case "http", "https":
		if u.Host == "" {
			return nil, fmt.Errorf("mirror %s has no host", redact(u))
		}
		return &Mirror{base: u, client: newHTTPClient()}, nil
	case "file":
		if (u.Host != "" && u.Host != "localhost") || !strings.HasPrefix(u.Path, "/") {
			return nil, fmt.Errorf("mirror %s: a file URL names an absolute path on this machine (file:///srv/mirror)", redact(u))
		}
		return &Mirror{dir: filepath.FromSlash(u.Path)}, nil
	default:
		return nil, fmt.Errorf("mirror %s: scheme %q is not supported; use http(s)://, file:// or a directory "+
			"(for an object store its HTTPS endpoint, e.g. https://storage.googleapis.com/BUCKET/PREFIX or https://BUCKET.s3.REGION.amazonaws.com/PREFIX)",
			redact(u), u.Scheme)
	}
}

// newHTTPClient has no overall timeout (a bundle can be hundreds of megabytes) but
// gives up on a server that accepts and never answers.
func newHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = 60 * time.Second
	tr.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	return &http.Client{Transport: tr}
}

// String is the mirror without credentials (user info, query tokens of a signed URL).
func (m *Mirror) String() string {
	if m.base != nil {
		return redact(m.base)
	}
	return m.dir
}

func redact(u *url.URL) string {
	c := *u
	c.User = nil
	c.RawQuery = ""
	c.Fragment = ""
	return c.String()
}

func redactRaw(raw string) string {
	if i := strings.IndexAny(raw, "@?"); i >= 0 {
		return raw[:i] + "…"
	}
	return raw
}

// where names an object of the mirror for messages.
func (m *Mirror) where(rel string) string {
	if m.base != nil {
		return strings.TrimSuffix(redact(m.base), "/") + "/" + rel
	}
	return filepath.Join(m.dir, filepath.FromSlash(rel))
}

// open returns the object at rel (a slash-separated path below the mirror's
// base) and its size, -1 when the server does not say; errNoObject when the
// mirror does not hold it.
func (m *Mirror) open(ctx context.Context, rel string) (io.ReadCloser, int64, error) {
	if m.base == nil {
		f, err := os.Open(filepath.Join(m.dir, filepath.FromSlash(rel)))
		if errors.Is(err, fs.ErrNotExist) {
			if fi, derr := os.Stat(m.dir); derr != nil || !fi.IsDir() {
				return nil, 0, fmt.Errorf("mirror directory %s does not exist", m.dir)
			}
			return nil, 0, errNoObject
		}
		if err != nil {
			return nil, 0, err
		}
		fi, err := f.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			f.Close()
			return nil, 0, fmt.Errorf("%s is not a regular file", m.where(rel))
		}
		return f, fi.Size(), nil
	}
	u := *m.base
	u.Path = strings.TrimSuffix(m.base.Path, "/") + "/" + rel
	u.RawPath = ""
	// The query stays: a container-wide signed URL (an Azure SAS) signs every object below it.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := m.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text repeats the URL, credentials and all
		}
		return nil, 0, fmt.Errorf("GET %s: %v", m.where(rel), err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return resp.Body, resp.ContentLength, nil
	case http.StatusNotFound, http.StatusGone:
		resp.Body.Close()
		return nil, 0, errNoObject
	default:
		resp.Body.Close()
		msg := fmt.Sprintf("GET %s: %s", m.where(rel), resp.Status)
		if resp.StatusCode == http.StatusForbidden {
			msg += " (an object store without list permission answers this for a missing object too)"
		}
		return nil, 0, errors.New(msg)
	}
}

// objectPaths are where a bundle lives on a mirror: PLATFORM/KEY.json (its
// manifest) beside PLATFORM/KEY.tar.gz, PLATFORM being "linux-amd64".
func objectPaths(platform, key string) (manifest, archive string) {
	dir := strings.ReplaceAll(platform, "/", "-")
	return path.Join(dir, key+".json"), path.Join(dir, key+".tar.gz")
}
