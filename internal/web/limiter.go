package web

import (
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// attemptLimiter allows at most max attempts per key in any sliding window. An attempt is
// reserved before the work it guards (a password hash, an enrollment), atomically for all its keys
// (an account and a client address), so a flood of concurrent requests cannot pass the limit
// between the check and the record. Keys live in an LRU of bounded size: memory stays bounded
// under a flood of distinct names or addresses (an evicted key starts afresh, which only helps an
// attacker who already spreads over more keys than the LRU holds; the hashing concurrency still
// bounds the cost).
type attemptLimiter struct {
	max    int
	window time.Duration

	mu   sync.Mutex
	keys *simplelru.LRU[string, []time.Time]
}

// defaultLimiterKeys bounds the keys a limiter remembers (each holds at most max timestamps).
const defaultLimiterKeys = 16384

func newAttemptLimiter(max int, window time.Duration, keys int) *attemptLimiter {
	if keys <= 0 {
		keys = defaultLimiterKeys
	}
	lru, _ := simplelru.NewLRU[string, []time.Time](keys, nil) // only errors on size <= 0
	return &attemptLimiter{max: max, window: window, keys: lru}
}

// reservation is one reserved attempt; cancel returns it (the work did not happen, or succeeded
// and should not count against the person).
type reservation struct {
	l    *attemptLimiter
	keys []string
	at   time.Time
}

// reserve reserves one attempt under every key at now, or none: it returns ok false and how long
// until the earliest key frees a place when any key is at its limit.
func (l *attemptLimiter) reserve(now time.Time, keys ...string) (r reservation, ok bool, retry time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	recent := make([][]time.Time, len(keys))
	for i, k := range keys {
		ts, _ := l.keys.Get(k)
		kept := ts[:0:0]
		for _, t := range ts {
			if now.Sub(t) < l.window {
				kept = append(kept, t)
			}
		}
		recent[i] = kept
		if len(kept) >= l.max {
			retry = max(retry, l.window-now.Sub(kept[0]))
		}
	}
	if retry > 0 {
		for i, k := range keys {
			l.keys.Add(k, recent[i])
		}
		return reservation{}, false, retry
	}
	for i, k := range keys {
		l.keys.Add(k, append(recent[i], now))
	}
	return reservation{l: l, keys: keys, at: now}, true, 0
}

// cancel gives the reserved attempt back.
func (r reservation) cancel() {
	if r.l == nil {
		return
	}
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	for _, k := range r.keys {
		ts, ok := r.l.keys.Peek(k)
		if !ok {
			continue
		}
		for i, t := range ts {
			if t.Equal(r.at) {
				r.l.keys.Add(k, append(ts[:i:i], ts[i+1:]...))
				break
			}
		}
	}
}

// size returns how many keys the limiter holds (for tests of its bound).
func (l *attemptLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.keys.Len()
}
