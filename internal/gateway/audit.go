package gateway

import (
	"context"
	"log/slog"
	"net/netip"
	"time"
)

// auditRecord gathers one request's audit line. It holds metadata only:
// the path without its query string, never a body, a query or a header.
type auditRecord struct {
	addr        netip.Addr
	caller      Caller
	destination string
	method      string
	path        string
	bytesIn     int64
	status      int    // set when no response was written (the sandbox left)
	reason      string // why the gateway refused or failed
	err         string // the upstream error, credentials masked
	cut         bool   // the response was cut short
}

// maxLoggedPath bounds the path in an audit line.
const maxLoggedPath = 512

// audit writes the request's one line.
func (g *Gateway) audit(rec *auditRecord, rw *responseRecorder, start time.Time) {
	status := rec.status
	if rw.wroteHeader {
		status = rw.status
	}
	attrs := []slog.Attr{
		slog.String("sandbox", rec.caller.Sandbox),
		slog.String("claim", rec.caller.Claim), // "": a warm sandbox, no claim yet
		slog.String("pod", rec.caller.Pod),
		slog.String("namespace", rec.caller.Namespace),
		slog.String("destination", rec.destination),
		slog.String("method", rec.method),
		slog.String("path", truncate(rec.path, maxLoggedPath)),
		slog.Int("status", status),
		slog.Int64("bytes_in", rec.bytesIn),
		slog.Int64("bytes_out", rw.bytesOut),
		slog.Float64("duration_ms", float64(g.now().Sub(start).Microseconds())/1000),
	}
	if rec.addr.IsValid() {
		attrs = append(attrs, slog.String("caller_addr", rec.addr.String()))
	}
	if rec.reason != "" {
		attrs = append(attrs, slog.String("reason", rec.reason))
	}
	if rec.err != "" {
		attrs = append(attrs, slog.String("error", rec.err))
	}
	if rec.cut {
		attrs = append(attrs, slog.Bool("cut", true))
	}
	g.log.LogAttrs(context.Background(), slog.LevelInfo, "request", attrs...)
}
