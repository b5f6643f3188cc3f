package gateway

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
)

// minSecretLen is the shortest key accepted: a shorter one is no real key,
// and masking it would garble ordinary text.
const minSecretLen = 8

// maxSecretFile bounds a credential file.
const maxSecretFile = 64 << 10

// injected is the header a destination's requests carry.
type injected struct {
	name, value string
}

// credentialSet is every destination's credential, loaded from the files,
// and what masks them.
type credentialSet struct {
	byHost  map[string]injected
	secrets [][]byte
	masker  *strings.Replacer
	longest int
}

// loadCredentials reads every credential file. Errors name the file, never
// its content.
func loadCredentials(c *Config) (*credentialSet, error) {
	cs := &credentialSet{byHost: map[string]injected{}}
	for _, d := range c.Destinations {
		cr := d.Credential
		if cr == nil {
			continue
		}
		if cr.BasicAuth != nil {
			user, err := readSecret(cr.BasicAuth.UserFile, false)
			if err != nil {
				return nil, err
			}
			pass, err := readSecret(cr.BasicAuth.PasswordFile, true)
			if err != nil {
				return nil, err
			}
			if strings.Contains(user, ":") {
				return nil, fmt.Errorf("%s: a basic-auth user holds no colon", cr.BasicAuth.UserFile)
			}
			token := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
			cs.byHost[d.Host] = injected{"Authorization", "Basic " + token}
			cs.add(pass)
			cs.add(token)
			continue
		}
		key, err := readSecret(cr.KeyFile, true)
		if err != nil {
			return nil, err
		}
		cs.byHost[d.Host] = injected{http.CanonicalHeaderKey(cr.Header), strings.Replace(cr.Format, keyPlaceholder, key, 1)}
		cs.add(key)
	}
	var pairs []string
	for _, s := range cs.secrets {
		pairs = append(pairs, string(s), strings.Repeat("*", len(s)))
	}
	cs.masker = strings.NewReplacer(pairs...)
	return cs, nil
}

func (cs *credentialSet) add(s string) {
	cs.secrets = append(cs.secrets, []byte(s))
	cs.longest = max(cs.longest, len(s))
}

// readSecret reads a credential file, trimming surrounding white space.
func readSecret(path string, secret bool) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("reading a credential: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return "", fmt.Errorf("reading a credential: %s: %w", path, err)
	}
	if len(b) > maxSecretFile {
		return "", fmt.Errorf("%s: over %d bytes: not a credential", path, maxSecretFile)
	}
	s := strings.TrimSpace(string(b))
	switch {
	case s == "":
		return "", fmt.Errorf("%s: empty", path)
	case !validHeaderValue(s):
		return "", fmt.Errorf("%s: holds a control character (a line break inside?)", path)
	case secret && len(s) < minSecretLen:
		return "", fmt.Errorf("%s: shorter than %d bytes: too short to be a key, or to be masked", path, minSecretLen)
	}
	return s, nil
}

// mask replaces every secret in s by asterisks.
func (cs *credentialSet) mask(s string) string {
	if cs == nil || len(cs.secrets) == 0 {
		return s
	}
	return cs.masker.Replace(s)
}

// maskBytes replaces every secret in b, in place, by as many asterisks.
func (cs *credentialSet) maskBytes(b []byte) {
	for _, s := range cs.secrets {
		for off := 0; ; {
			i := bytes.Index(b[off:], s)
			if i < 0 {
				break
			}
			for j := off + i; j < off+i+len(s); j++ {
				b[j] = '*'
			}
			off += i + len(s)
		}
	}
}

// maskHeader masks every secret in h's values (in place) and drops
// Set-Cookie: the gateway strips the sandbox's cookies, so it keeps none.
func (cs *credentialSet) maskHeader(h http.Header) {
	h.Del("Set-Cookie")
	if cs == nil || len(cs.secrets) == 0 {
		return
	}
	for k, vv := range h {
		for i, v := range vv {
			if m := cs.masker.Replace(v); m != v {
				h[k][i] = m
			}
		}
	}
}

// maskingReader masks the secrets in a byte stream. It holds back the last
// longest-1 bytes until more arrive, so a secret split across reads is
// still seen; its memory is one read plus that, from a pool.
type maskingReader struct {
	r     io.Reader
	cs    *credentialSet
	buf   []byte // from bufPool once reading starts, cap >= maskChunk+longest
	ready int    // how many bytes of buf are masked for good
	err   error
}

const maskChunk = 32 << 10

func newMaskingReader(r io.Reader, cs *credentialSet) *maskingReader {
	return &maskingReader{r: r, cs: cs}
}

func (m *maskingReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if len(m.cs.secrets) == 0 {
		return m.r.Read(p)
	}
	for m.ready == 0 {
		if m.err != nil {
			return 0, m.err
		}
		if m.buf == nil {
			m.buf = bufPool.get(maskChunk + m.cs.longest)[:0]
		}
		have := len(m.buf)
		n, err := m.r.Read(m.buf[have : have+maskChunk])
		m.buf = m.buf[:have+n]
		m.cs.maskBytes(m.buf)
		if err != nil {
			m.err = err
			m.ready = len(m.buf)
		} else {
			m.ready = max(len(m.buf)-(m.cs.longest-1), 0)
		}
	}
	n := copy(p, m.buf[:m.ready])
	m.buf = m.buf[:copy(m.buf, m.buf[n:])]
	m.ready -= n
	return n, nil
}

// release gives the buffer back; the reader must not be read after it.
func (m *maskingReader) release() {
	if m.buf != nil {
		bufPool.put(m.buf)
		m.buf = nil
	}
}
