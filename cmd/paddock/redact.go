package main

import (
	"bytes"
	"io"
	"sync"

	"github.com/paddock-platform/paddock/internal/model"
)

// Every line paddock prints for people passes through the redaction of the
// platforms it loaded: a value from a sensitive variable or a config secret
// never reaches a terminal or a CI log, whichever command prints it (a
// success line, a stack banner, an error). Machine output the user asked
// for in plain text (render --allow-sensitive) bypasses it explicitly.

// outputRedaction holds the sensitive values of every platform this process
// has loaded.
var outputRedaction = &redactor{}

type redactor struct {
	mu     sync.Mutex
	values []string
}

// add registers p's sensitive values, from now on masked in all output.
func (r *redactor) add(p *model.Platform) {
	if p == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.values = append(r.values, p.SensitiveValues()...)
}

// addValues registers values (a backend's credentials), masked from now on.
func (r *redactor) addValues(values []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range values {
		if v != "" {
			r.values = append(r.values, v)
		}
	}
}

func (r *redactor) redact(b []byte) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.values) == 0 {
		return b
	}
	return []byte(model.RedactValues(string(b), r.values))
}

// redactingWriter writes whole lines through the redactor: a value is never
// split between two writes. A line longer than maxPending is written in
// pieces.
type redactingWriter struct {
	mu      sync.Mutex
	w       io.Writer
	r       *redactor
	pending []byte
}

const maxPending = 64 << 10

func newRedactingWriter(w io.Writer, r *redactor) *redactingWriter {
	return &redactingWriter{w: w, r: r}
}

func (rw *redactingWriter) Write(b []byte) (int, error) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	rw.pending = append(rw.pending, b...)
	end := bytes.LastIndexAny(rw.pending, "\n\r") + 1
	if end == 0 && len(rw.pending) > maxPending {
		end = len(rw.pending)
	}
	if end > 0 {
		out := rw.r.redact(rw.pending[:end])
		rest := copy(rw.pending, rw.pending[end:])
		rw.pending = rw.pending[:rest]
		if _, err := rw.w.Write(out); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

// Flush writes what is left of the last line.
func (rw *redactingWriter) Flush() error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if len(rw.pending) == 0 {
		return nil
	}
	out := rw.r.redact(rw.pending)
	rw.pending = rw.pending[:0]
	_, err := rw.w.Write(out)
	return err
}

// unredacted is the writer under w when w redacts (what was written
// through w so far is flushed first), else w.
func unredacted(w io.Writer) io.Writer {
	if rw, ok := w.(*redactingWriter); ok {
		_ = rw.Flush()
		return rw.w
	}
	return w
}
