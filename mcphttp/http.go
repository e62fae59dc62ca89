// Package mcphttp serves a gated MCP server over streamable HTTP, with what
// keeps one client from exhausting it: authentication (package httpauth),
// session caps per caller, body size and time limits, and the caller's
// address handed to the gate (ClientAddrHeader) for its per-caller pending
// allowance. `mcpsafe files` and `mcpsafe proxy` share it, flags included.
package mcphttp

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/mcpsafe/mcpsafe/httpauth"
	"github.com/mcpsafe/mcpsafe/internal/loopback"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mrtrProtocol is the first MCP protocol version whose requests carry the
// client's capabilities themselves, so that they need no session.
const mrtrProtocol = "2026-07-28"

// ClientAddrHeader carries an unauthenticated caller's network address from
// MCPHandler to the gate (mcpsafe.Options.ClientAddrHeader). MCPHandler
// removes whatever a client sent under this name, so the gate can trust it.
const ClientAddrHeader = "Mcpsafe-Client-Addr"

// HTTP is the HTTP part of a server's command line: where to listen, who may
// call, and the limits that keep one client from exhausting the server.
type HTTP struct {
	Addr string // empty: serve stdio instead
	// Sessions: by default a client before protocol 2026-07-28 gets a
	// stateful session (it declares elicitation once, at initialize, and is
	// asked in-call on that session) and a newer client none (its requests
	// carry its capabilities; approvals travel as sealed request state, so
	// any replica can answer). Stateful keeps a session for every client;
	// Stateless for none (replicas without sticky sessions; older clients
	// then cannot be asked in-call). Not both.
	Stateful  bool
	Stateless bool

	// Auth turns on bearer-token authentication when Auth.Issuer is set.
	// A non-loopback Addr is refused without it.
	Auth httpauth.Config

	// SessionIdle closes a stateful session after this long without a
	// request; MaxSessions and MaxSessionsPerClient cap how many are open
	// at once, in all and per caller (token subject, or network address
	// for unauthenticated callers).
	SessionIdle          time.Duration
	MaxSessions          int
	MaxSessionsPerClient int

	// HeaderTimeout and BodyTimeout bound how long a client may take to send
	// a request's headers and its body; MaxBodyBytes caps the body.
	HeaderTimeout time.Duration
	BodyTimeout   time.Duration
	MaxBodyBytes  int64

	// Wrap, when set, wraps the MCP handler inside authentication and the
	// body limits (the proxy's HTTP fast lane sits there).
	Wrap func(http.Handler) http.Handler

	// Ready, when set, is asked by /readyz: an error means "send me no
	// new traffic" (the server is stopping, say). /healthz answers 200
	// while the process serves; /readyz 200 while Ready says nil and the
	// server is not shutting down. Neither needs authentication, and
	// neither says more than that.
	Ready func() error
}

// Defaults for the HTTP limits, also used by library callers that leave a
// field zero.
const (
	DefaultSessionIdle          = 30 * time.Minute
	DefaultMaxSessions          = 1000
	DefaultMaxSessionsPerClient = 16
	DefaultHeaderTimeout        = 10 * time.Second
	DefaultBodyTimeout          = 30 * time.Second
	DefaultMaxBodyBytes         = 4 << 20 // the SDK's own default for MCP messages
)

// RegisterFlags binds the HTTP flags `mcpsafe files` and `mcpsafe proxy` share.
func (h *HTTP) RegisterFlags(fl *flag.FlagSet) {
	fl.StringVar(&h.Addr, "http", "", "serve streamable HTTP on this address at /mcp instead of stdio (non-loopback needs --auth-issuer)")
	fl.BoolVar(&h.Stateful, "http-stateful", false, "keep an HTTP session for every client (clients on protocol 2026-07-28 then fall back to an older one; default: sessions only for clients before 2026-07-28, which need one to be asked in-call)")
	fl.BoolVar(&h.Stateless, "http-stateless", false, "keep no HTTP session for anyone, so that replicas without sticky sessions can answer any request (clients before protocol 2026-07-28 then cannot be asked in-call: they get tokens or refusals)")
	fl.StringVar(&h.Auth.Issuer, "auth-issuer", "", "OAuth/OIDC issuer whose bearer JWTs authenticate HTTP callers (the token's sub is the principal)")
	fl.StringVar(&h.Auth.Audience, "auth-audience", "", "this server's canonical MCP URL, e.g. https://mcp.example.com/mcp: tokens must name it in aud")
	fl.StringVar(&h.Auth.JWKSURL, "auth-jwks-url", "", "the issuer's JWKS (default: jwks_uri from the issuer's metadata)")
	fl.DurationVar(&h.SessionIdle, "http-session-idle", DefaultSessionIdle, "close a stateful HTTP session after this long without a request")
	fl.IntVar(&h.MaxSessions, "http-max-sessions", DefaultMaxSessions, "cap on open stateful HTTP sessions")
	fl.IntVar(&h.MaxSessionsPerClient, "http-max-sessions-per-client", DefaultMaxSessionsPerClient, "cap on open stateful HTTP sessions per caller (token subject, or address when unauthenticated)")
	fl.DurationVar(&h.BodyTimeout, "http-body-timeout", DefaultBodyTimeout, "how long a client may take to send a request body")
	fl.Int64Var(&h.MaxBodyBytes, "http-max-body", DefaultMaxBodyBytes, "largest request body accepted, in bytes")
}

func (h *HTTP) setDefaults() {
	set := func(p *time.Duration, d time.Duration) {
		if *p <= 0 {
			*p = d
		}
	}
	set(&h.SessionIdle, DefaultSessionIdle)
	set(&h.HeaderTimeout, DefaultHeaderTimeout)
	set(&h.BodyTimeout, DefaultBodyTimeout)
	if h.MaxSessions <= 0 {
		h.MaxSessions = DefaultMaxSessions
	}
	if h.MaxSessionsPerClient <= 0 {
		h.MaxSessionsPerClient = DefaultMaxSessionsPerClient
	}
	if h.MaxBodyBytes <= 0 {
		h.MaxBodyBytes = DefaultMaxBodyBytes
	}
}

// ErrNoIdentity refuses an unauthenticated server on a non-loopback address:
// every caller would be the same "anonymous" principal, so an approval
// bound to the principal would bind nothing.
var ErrNoIdentity = errors.New("serving MCP over HTTP on a non-loopback address needs authentication: give --auth-issuer and --auth-audience (see docs/USAGE.md), or listen on 127.0.0.1")

// Check refuses a configuration that would serve strangers without knowing
// who they are.
func (h *HTTP) Check() error {
	if h.Stateful && h.Stateless {
		return errors.New("--http-stateful and --http-stateless exclude each other")
	}
	if h.Auth.Issuer == "" && (h.Auth.Audience != "" || h.Auth.JWKSURL != "") {
		return errors.New("--auth-audience and --auth-jwks-url need --auth-issuer")
	}
	if h.Addr != "" {
		if _, port, err := net.SplitHostPort(h.Addr); err != nil || port == "" {
			return fmt.Errorf("--http %q is not HOST:PORT: give the port too, e.g. --http 127.0.0.1:8765 (or 127.0.0.1:0 for any free port)", h.Addr)
		}
	}
	if h.Addr != "" && h.Auth.Issuer == "" && !loopback.Addr(h.Addr) {
		return fmt.Errorf("%s: %w", h.Addr, ErrNoIdentity)
	}
	return nil
}

// MCPHandler serves server over streamable HTTP with h's session limits. It
// records each unauthenticated caller's address under ClientAddrHeader (and
// drops any value the client sent there) so that the gate can count pending
// approvals per caller.
func (h HTTP) MCPHandler(server *mcp.Server) http.Handler {
	h.setDefaults()
	newSDK := func(stateless bool) http.Handler {
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
			&mcp.StreamableHTTPOptions{
				Stateless:           stateless,
				SessionTimeout:      h.SessionIdle,
				MaxRequestBodyBytes: h.MaxBodyBytes,
				// A client that drops the request has left: a channel call
				// waiting for a human then withdraws it (clients on protocol
				// 2026-07-28 and later; older ones cancel with a notification,
				// which reaches the call only in stateful mode).
				PropagateRequestCancellation: true,
			})
	}
	// Two SDK handlers: its stateless one answers an older client's
	// request with a fresh, capability-less session and refuses
	// server-to-client requests (no in-call elicitation), and its stateful
	// one rejects 2026-07-28 calls.
	stateless, sdk := newSDK(true), newSDK(false)
	sessionful := func(r *http.Request) bool {
		return h.Stateful || !h.Stateless && r.Header.Get("Mcp-Protocol-Version") < mrtrProtocol
	}
	lim := &sessionLimit{server: server, max: h.MaxSessions, perClient: h.MaxSessionsPerClient, byClient: map[string]int{}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(ClientAddrHeader)
		client := clientKey(r)
		if auth.TokenInfoFromContext(r.Context()) == nil {
			r.Header.Set(ClientAddrHeader, client)
		}
		if !sessionful(r) {
			stateless.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
			sdk.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.MaxBodyBytes))
		if err != nil {
			http.Error(w, "reading body: "+err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !mayInitialize(body) {
			// The SDK closes a session that was not initialized before
			// this request ends; holding a slot for it would refuse the
			// client's next request, which can arrive before this
			// handler returns.
			sdk.ServeHTTP(w, r)
			return
		}
		if err := lim.reserve(client); err != nil {
			w.Header().Set("Retry-After", "60")
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		sdk.ServeHTTP(w, r)
		lim.track(client, w.Header().Get("Mcp-Session-Id"))
	})
}

// mayInitialize reports whether a POST without a session id may open a
// lasting session: only an initialize request does. The SDK's own decoder
// decides, so that no message reads as something else here than there;
// what it cannot decode (a batch, garbage) counts, to be safe.
func mayInitialize(body []byte) bool {
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return true
	}
	req, ok := msg.(*jsonrpc.Request)
	return ok && req.Method == "initialize"
}

// clientKey names the caller for per-client caps: the token's subject when
// authenticated, else the remote address without the port (which a client
// picks freely for every connection). An IPv6 caller is its /64, the
// smallest network a host is usually given: keying on the full address
// would hand one host 2^64 allowances.
func clientKey(r *http.Request) string {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil && ti.UserID != "" {
		return "user " + ti.UserID
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		return "addr " + ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return "addr " + host
}

// sessionLimit counts open stateful sessions in all and per client. A slot is
// reserved before the SDK creates a session and released when the session
// ends (closed by the client, idle expiry, or a failed initialize).
type sessionLimit struct {
	server         *mcp.Server
	max, perClient int

	mu       sync.Mutex
	total    int
	byClient map[string]int
}

var (
	errTooManySessions       = errors.New("too many open MCP sessions on this server; try again later")
	errTooManySessionsClient = errors.New("too many open MCP sessions for this caller; close one (DELETE) or let one expire")
)

func (l *sessionLimit) reserve(client string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total >= l.max {
		return errTooManySessions
	}
	if l.byClient[client] >= l.perClient {
		return errTooManySessionsClient
	}
	l.total++
	l.byClient[client]++
	return nil
}

func (l *sessionLimit) release(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.byClient[client]--; l.byClient[client] <= 0 {
		delete(l.byClient, client)
	}
}

// track keeps the reserved slot for as long as session id lives, or frees it
// at once when no lasting session came of the request. The SDK closes a
// session that was not initialized (a server/discover probe, a bad first
// message) before the request ends; such a one must not hold a slot even
// for the moment its close takes to be noticed.
func (l *sessionLimit) track(client, id string) {
	if id != "" {
		for ss := range l.server.Sessions() {
			if ss.ID() == id && ss.InitializeParams() != nil {
				go func() {
					ss.Wait()
					l.release(client)
				}()
				return
			}
		}
	}
	l.release(client)
}

// LimitBodies gives each request body timeout to arrive in full and caps it
// at max bytes, then hands h the buffered body (BodyDeadline around
// BufferBodies).
func LimitBodies(h http.Handler, timeout time.Duration, max int64) http.Handler {
	return BodyDeadline(BufferBodies(h, max), timeout)
}

// BodyDeadline gives each request body timeout to arrive: whoever reads it
// (a handler, or net/http discarding what a handler left unread) fails once
// the deadline passes, and the deadline is lifted when the body has been
// read to its end. It is a per-request deadline rather than
// http.Server.ReadTimeout, which would also cut off the long-lived streams
// (SSE, long polls) that follow a body.
func BodyDeadline(h http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			_ = rc.SetReadDeadline(time.Now().Add(timeout))
			r.Body = &liftAtEOF{ReadCloser: r.Body, rc: rc}
		}
		h.ServeHTTP(w, r)
	})
}

type liftAtEOF struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *liftAtEOF) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// BufferBodies reads each request body whole, at most max bytes, and hands
// h a copy. A body that does not arrive (BodyDeadline) gets 408, one over
// the cap 413; both close the connection rather than wait for the rest.
func BufferBodies(h http.Handler, max int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
		if err != nil {
			w.Header().Set("Connection", "close")
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				http.Error(w, fmt.Sprintf("request body exceeds %d bytes", max), http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "request body not received in time", http.StatusRequestTimeout)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	})
}

// NewHTTPServer wraps h with the body limits and returns a server with
// header and idle timeouts. It sets no ReadTimeout or WriteTimeout: MCP
// streams and the approval service's long polls legitimately stay open.
func NewHTTPServer(h http.Handler, headerTimeout, bodyTimeout time.Duration, maxBody int64) *http.Server {
	return newServer(LimitBodies(h, bodyTimeout, maxBody), headerTimeout)
}

func newServer(h http.Handler, headerTimeout time.Duration) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: headerTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}

// Serve serves server at /mcp on h.Addr until ctx ends, with authentication
// when configured, and reports the bound address on log (a caller who asked
// for port 0 reads it there).
func (h HTTP) Serve(ctx context.Context, server *mcp.Server, log io.Writer) error {
	if err := h.Check(); err != nil {
		return err
	}
	h.setDefaults()
	mux := http.NewServeMux()
	// The body is read only once the caller is authenticated: a stranger
	// cannot make the server buffer bodies, and the deadline (set outside)
	// still bounds what net/http discards of a refused request's body.
	handler := h.MCPHandler(server)
	if h.Wrap != nil {
		handler = h.Wrap(handler)
	}
	handler = BufferBodies(handler, h.MaxBodyBytes)
	if h.Auth.Issuer != "" {
		res, err := httpauth.New(ctx, h.Auth)
		if err != nil {
			return err
		}
		handler = res.Protect(handler)
		res.Mount(mux)
	}
	mux.Handle("/mcp", handler)
	mux.Handle("GET /healthz", Health())
	mux.Handle("GET /readyz", Readiness(func() error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if h.Ready != nil {
			return h.Ready()
		}
		return nil
	}))
	ln, err := net.Listen("tcp", h.Addr)
	if err != nil {
		return err
	}
	hs := newServer(BodyDeadline(mux, h.BodyTimeout), h.HeaderTimeout)
	fmt.Fprintf(log, "mcpsafe: serving MCP on http://%s/mcp\n", ln.Addr())
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
	}()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Health answers 200 "alive": the liveness probe of a server.
func Health() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, `{"status":"alive"}`+"\n")
	})
}

// Readiness answers 200 "ready" while ready returns nil, else 503
// "not ready" (the reason stays in the server: a probe learns nothing
// else).
func Readiness(ready func() error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if ready() != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"status":"not ready"}`+"\n")
			return
		}
		io.WriteString(w, `{"status":"ready"}`+"\n")
	})
}
