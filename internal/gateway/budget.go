package gateway

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// budgets holds each caller's token buckets and in-flight count. Time comes
// from now (a fake clock in tests); the buckets are given it explicitly.
type budgets struct {
	cfg Budgets
	now func() time.Time

	mu        sync.Mutex
	callers   map[string]*callerBudget
	lastSweep time.Time
}

// callerBudget is one caller's share.
type callerBudget struct {
	requests *rate.Limiter
	bytes    *rate.Limiter
	inflight int // guarded by budgets.mu
	lastUsed time.Time
	now      func() time.Time
}

// idleForget is how long an idle caller's buckets are kept; after it they
// are full again anyway (a minute refills them), so forgetting is safe.
const idleForget = 5 * time.Minute

func newBudgets(cfg Budgets, now func() time.Time) *budgets {
	return &budgets{cfg: cfg, now: now, callers: map[string]*callerBudget{}}
}

// refusal is why a request was not admitted, and when to retry (seconds).
type refusal struct {
	reason     string
	retryAfter int
}

// admit takes one request from the caller's budget. On success it returns
// the caller's budget and a release to call when the request ends.
func (b *budgets) admit(key string) (*callerBudget, func(), *refusal) {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sweep(now)
	cb := b.callers[key]
	if cb == nil {
		cb = &callerBudget{
			requests: rate.NewLimiter(perSecond(int64(b.cfg.RequestsPerMinute)), b.cfg.RequestsPerMinute),
			bytes:    rate.NewLimiter(perSecond(b.cfg.BytesPerMinute), clampInt(b.cfg.BytesPerMinute)),
			now:      b.now,
		}
		b.callers[key] = cb
	}
	cb.lastUsed = now
	if cb.inflight >= b.cfg.ConcurrentRequests {
		return nil, nil, &refusal{"over the concurrent request budget", 1}
	}
	if t := cb.bytes.TokensAt(now); t <= 0 {
		return nil, nil, &refusal{"over the bytes per minute budget", retrySeconds(1-t, cb.bytes.Limit())}
	}
	if !cb.requests.AllowN(now, 1) {
		t := cb.requests.TokensAt(now)
		return nil, nil, &refusal{"over the requests per minute budget", retrySeconds(1-t, cb.requests.Limit())}
	}
	cb.inflight++
	var once sync.Once
	return cb, func() {
		once.Do(func() {
			b.mu.Lock()
			cb.inflight--
			b.mu.Unlock()
		})
	}, nil
}

// charge takes n bytes from the caller's byte budget. It may run the bucket
// into debt: the request in flight is bounded by the size limits, and the
// caller's next request waits until the debt is paid.
func (cb *callerBudget) charge(n int) {
	if cb == nil || n <= 0 {
		return
	}
	now := cb.now()
	for n > 0 {
		c := min(n, cb.bytes.Burst())
		cb.bytes.ReserveN(now, c)
		n -= c
	}
}

// sweep forgets callers idle for idleForget, at most once a minute.
func (b *budgets) sweep(now time.Time) {
	if now.Sub(b.lastSweep) < time.Minute {
		return
	}
	b.lastSweep = now
	for k, cb := range b.callers {
		if cb.inflight == 0 && now.Sub(cb.lastUsed) > idleForget {
			delete(b.callers, k)
		}
	}
}

func perSecond(perMinute int64) rate.Limit { return rate.Limit(float64(perMinute) / 60) }

func clampInt(v int64) int {
	if v > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(v)
}

// retrySeconds is how long until need tokens have accrued, in whole
// seconds, at least one.
func retrySeconds(need float64, r rate.Limit) int {
	if r <= 0 {
		return 60
	}
	s := math.Ceil(need / float64(r))
	if s < 1 || math.IsNaN(s) {
		return 1
	}
	if s > 3600 {
		return 3600
	}
	return int(s)
}
