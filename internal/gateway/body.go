package gateway

import (
	"io"
	"net/http"
	"sync"
)

// countingBody counts and charges the request body as it streams upstream.
type countingBody struct {
	io.ReadCloser
	n      *int64
	budget *callerBudget
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	*b.n += int64(n)
	b.budget.charge(n)
	return n, err
}

// limitedBody ends a response body with errResponseTooLarge past left bytes.
// The proxy then aborts the response: the sandbox sees it cut.
type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the limit from a longer one.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, errResponseTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// maskedBody is the response body the proxy copies: limited, then masked.
type maskedBody struct {
	*maskingReader
	limited *limitedBody
}

func (b maskedBody) Close() error {
	err := b.limited.Close()
	b.release()
	return err
}

// bufPool recycles the copy and masking buffers (32 KiB a response).
var bufPool = &bufferPool{}

type bufferPool struct{ p sync.Pool }

// get returns a buffer of length n at least.
func (b *bufferPool) get(n int) []byte {
	if v, ok := b.p.Get().(*[]byte); ok && cap(*v) >= n {
		return (*v)[:n]
	}
	return make([]byte, n)
}

func (b *bufferPool) put(buf []byte) { b.p.Put(&buf) }

// Get and Put make it the proxy's httputil.BufferPool.
func (b *bufferPool) Get() []byte  { return b.get(32 << 10) }
func (b *bufferPool) Put(p []byte) { b.put(p) }

// responseRecorder is the sandbox's ResponseWriter as the proxy sees it:
// it records the status and bytes for the audit line, charges the bytes to
// the caller's budget, and masks credentials in every header block it sends
// (1xx included).
type responseRecorder struct {
	http.ResponseWriter
	creds       *credentialSet
	budget      *callerBudget
	status      int
	wroteHeader bool
	bytesOut    int64
}

func (w *responseRecorder) WriteHeader(code int) {
	if code >= 200 {
		if w.wroteHeader {
			return
		}
		w.wroteHeader = true
		w.status = code
	}
	w.creds.maskHeader(w.Header())
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseRecorder) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytesOut += int64(n)
	w.budget.charge(n)
	return n, err
}

// Unwrap lets http.ResponseController (the proxy's flushes) reach the
// server's writer.
func (w *responseRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
