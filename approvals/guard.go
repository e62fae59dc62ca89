package approvals

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Host check (DNS rebinding).

// allowedHosts builds the set of host names the service answers to.
func allowedHosts(extra []string, origin string) (map[string]bool, error) {
	set := map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}
	if origin != "" {
		_, rest, _ := strings.Cut(origin, "://")
		set[hostOnly(rest)] = true
	}
	for _, h := range extra {
		k := hostOnly(h)
		if k == "" || strings.ContainsAny(k, "/ \t@") {
			return nil, fmt.Errorf("channel: host %q: want a host name or an IP address", h)
		}
		set[k] = true
	}
	return set, nil
}

// hostOnly returns the lower-case host of a Host header or host[:port],
// without the port and the brackets of an IPv6 literal.
func hostOnly(hostport string) string {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	return strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"))
}

// Throttling of failed logins and bearer tokens.

const (
	failBurst  = 10              // failed attempts a client address may make at once
	failRefill = 6 * time.Second // then one more per this interval
	failDelay  = 200 * time.Millisecond
	maxClients = 10_000 // addresses tracked before they share one budget
)

// throttle gives each client address a budget of failed authentications,
// shared by the login form and the bearer API. Successes cost nothing.
// Once the budget is spent the address is refused (429) before its
// credentials are even looked at, so guessing stops there, while other
// addresses are unaffected.
type throttle struct {
	mu       sync.Mutex
	clients  map[string]*rate.Limiter
	overflow *rate.Limiter // shared by addresses beyond maxClients
	burst    int
	refill   time.Duration
	delay    time.Duration // added to every failure
}

func newThrottle(burst int, refill, delay time.Duration) *throttle {
	return &throttle{
		clients:  map[string]*rate.Limiter{},
		overflow: rate.NewLimiter(rate.Every(refill), burst),
		burst:    burst, refill: refill, delay: delay,
	}
}

func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func (t *throttle) limiter(addr string) *rate.Limiter {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l, ok := t.clients[addr]; ok {
		return l
	}
	if len(t.clients) >= maxClients {
		for k, l := range t.clients {
			if l.Tokens() >= float64(t.burst) { // fully recovered: nothing to remember
				delete(t.clients, k)
			}
		}
		if len(t.clients) >= maxClients {
			return t.overflow
		}
	}
	l := rate.NewLimiter(rate.Every(t.refill), t.burst)
	t.clients[addr] = l
	return l
}

// blocked reports whether r's address has no failed attempts left, and
// for how long to wait.
func (t *throttle) blocked(r *http.Request) (bool, time.Duration) {
	l := t.limiter(clientAddr(r))
	if l.Tokens() >= 1 {
		return false, 0
	}
	return true, t.refill
}

// failed spends one attempt of r's address and slows the answer.
func (t *throttle) failed(r *http.Request) {
	t.limiter(clientAddr(r)).Allow()
	time.Sleep(t.delay)
}

func tooMany(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)))
	writeJSON(w, http.StatusTooManyRequests, map[string]any{"error": "too many failed attempts from this address; try again later"})
}
