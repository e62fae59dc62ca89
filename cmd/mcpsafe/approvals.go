package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mcpsafe/mcpsafe/approvals"
	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/internal/loopback"
	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/mcpsafe/mcpsafe/mcphttp"
	"github.com/mcpsafe/mcpsafe/metrics"
)

func init() {
	register("approvals", command{summary: "run the approval service: web UI, JSON API and signed webhook for mode channel", run: runApprovals})
}

// approvalsContext is what serve runs under; tests replace it to stop the
// server without a signal.
var approvalsContext = func() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

type requireList []string

func (r *requireList) String() string     { return strings.Join(*r, ",") }
func (r *requireList) Set(v string) error { *r = append(*r, v); return nil }

func runApprovals(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "keygen" {
		return runApprovalsKeygen(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "passwd" {
		return runApprovalsPasswd(args[1:], os.Stdin, stdout, stderr)
	}
	fl := newFlags("mcpsafe approvals serve", "mcpsafe approvals serve --secret-file PATH --approvers-file PATH [--listen 127.0.0.1:8080] [--store file:PATH] [--require TOOL=N ...]\nmcpsafe approvals passwd --approvers-file PATH NAME   (new password on stdin)\nmcpsafe approvals passwd --approvers-file PATH --convert\nmcpsafe approvals keygen --signing-key-file PATH", stderr)
	listen := fl.String("listen", "127.0.0.1:8080", "address to listen on")
	secretFile := fl.String("secret-file", "", "HMAC secret shared with the gated servers: one line, base64 of >= 32 bytes, mode 0600 (required)")
	approversFile := fl.String("approvers-file", "", "approvers, one name:argon2id-hash per line (mcpsafe approvals passwd), mode 0600 (required)")
	store := fl.String("store", "memory", "where the service's state lives: memory, file:PATH (an SQLite file; survives a restart), or postgres://… (a PostgreSQL database any number of replicas share)")
	var require requireList
	fl.Var(&require, "require", "TOOL=N: TOOL needs N distinct approvers (repeatable)")
	var hosts requireList
	fl.Var(&hosts, "host", "a host name clients use to reach the service (repeatable); other Host headers are refused (DNS rebinding). The --listen address, localhost and the --origin host are always allowed")
	origin := fl.String("origin", "", "public origin of the UI when behind a TLS proxy, e.g. https://approvals.example.com")
	maxWait := fl.Duration("max-wait", time.Hour, "longest a request may stay pending")
	maxPending := fl.Int("max-pending", 1000, "most requests pending at once; beyond it new ones are refused (503) until some are decided or expire. The page shows them 50 at a time")
	tlsCert := fl.String("tls-cert", "", "serve HTTPS with this certificate (PEM)")
	tlsKey := fl.String("tls-key", "", "private key for --tls-cert (PEM)")
	bodyTimeout := fl.Duration("body-timeout", mcphttp.DefaultBodyTimeout, "how long a client may take to send a request body")
	grantsLedger := fl.String("ledger", "", "the gated servers' shared ledger (file:PATH, redis://..., postgres://...): list and revoke their standing grants in the page and the API")
	metricsAddr := fl.String("metrics", "", "serve Prometheus metrics at http://ADDR/metrics; off when empty")
	oidcIssuer := fl.String("oidc-issuer", "", "single sign-on: the OpenID provider's issuer URL (needs --origin, --oidc-client-id, --oidc-users-file)")
	oidcClient := fl.String("oidc-client-id", "", "single sign-on: this service's client id at the provider")
	oidcSecret := fl.String("oidc-client-secret-file", "", "single sign-on: file holding the client secret (one line, mode 0600); omit for a public client")
	oidcClaim := fl.String("oidc-claim", "email", "single sign-on: the ID token claim that names the person: email (must be verified) or sub")
	oidcUsers := fl.String("oidc-users-file", "", "single sign-on: VALUE NAME lines mapping a claim value to the approver name it signs in as (mode 0600)")
	passkeysFile := fl.String("passkeys-file", "", "turn on passkeys: approvers register them here (needs --origin; gates get a copy via --approver-passkeys-file)")
	var requirePasskey requireList
	fl.Var(&requirePasskey, "require-passkey", "TOOL: approving TOOL takes each approver's passkey on the call (repeatable; needs --passkeys-file)")
	signingKey := fl.String("signing-key-file", "", "Ed25519 key that signs every approval (mcpsafe approvals keygen); gates check it with --approver-public-key")
	var journals requireList
	fl.Var(&journals, "journal", "a gate's journal (mcpsafe files/proxy --journal) for the overview page to chart and list and the page to say whether a decided call ran, read only (repeatable)")
	slackToken := fl.String("slack-bot-token-file", "", "Slack approvals: file holding the Slack app's bot token (xoxb-…; scopes chat:write, usergroups:read), one line, mode 0600 (needs --slack-signing-secret-file, --slack-channel, --origin)")
	slackSecret := fl.String("slack-signing-secret-file", "", "Slack approvals: file holding the Slack app's signing secret, one line, mode 0600; Slack's clicks arrive at ORIGIN/slack/interactions")
	slackChannel := fl.String("slack-channel", "", "Slack approvals: the id of the channel requests are posted to (C0123ABCD; invite the app to it)")
	slackGroup := fl.String("slack-group", "", "Slack approvals: a user group id (S0123ABCD) whose members may approve too, checked at each click (approvers-file lines with slack=USERID always may); a member's approval counts only when the requester is matched to a Slack account (slack= line, or an email principal with scope users:read.email)")
	slackAPI := fl.String("slack-api-url", "https://slack.com/api/", "Slack approvals: the Slack Web API base URL")
	plainHTTP := fl.Bool("allow-plain-http", false, "allow plain HTTP on a non-loopback address (passwords and approvals travel unencrypted)")
	if len(args) == 0 || args[0] != "serve" {
		if len(args) > 0 && wantsHelp(args[:1]) {
			fl.SetOutput(stdout)
			fl.Usage()
			return 0
		}
		fl.Usage()
		return 2
	}
	if code, done := parseFlags(fl, args[1:], stdout); done {
		return code
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "mcpsafe approvals serve: unexpected argument %q\n", fl.Arg(0))
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "mcpsafe approvals serve:", err)
		return 1
	}
	if *secretFile == "" || (*approversFile == "" && *oidcIssuer == "") {
		fmt.Fprintln(stderr, "mcpsafe approvals serve: --secret-file and --approvers-file (or single sign-on: --oidc-issuer) are required")
		return 2
	}
	if *maxPending < 1 {
		fmt.Fprintln(stderr, "mcpsafe approvals serve: --max-pending must be at least 1")
		return 2
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		fmt.Fprintln(stderr, "mcpsafe approvals serve: --tls-cert and --tls-key go together")
		return 2
	}
	req, err := approvals.ParseRequire(require)
	if err != nil {
		fmt.Fprintln(stderr, "mcpsafe approvals serve:", err)
		return 2
	}
	if _, port, err := net.SplitHostPort(*listen); err != nil || port == "" {
		fmt.Fprintf(stderr, "mcpsafe approvals serve: --listen %q is not HOST:PORT: give the port too, e.g. --listen 127.0.0.1:8080\n", *listen)
		return 2
	}
	if *tlsCert == "" && !*plainHTTP && !loopback.Addr(*listen) {
		return fail(fmt.Errorf("%s is not a loopback address: use --tls-cert/--tls-key, a TLS proxy on this host, or --allow-plain-http", *listen))
	}
	secret, err := channel.LoadSecretFile(*secretFile)
	if err != nil {
		return fail(err)
	}
	var approvers []approvals.Approver
	if *approversFile != "" {
		if approvers, err = approvals.LoadApproversFile(*approversFile); err != nil {
			return fail(err)
		}
	}
	var sso *approvals.OIDCConfig
	if *oidcIssuer != "" {
		if *oidcClient == "" || *oidcUsers == "" || *origin == "" {
			fmt.Fprintln(stderr, "mcpsafe approvals serve: --oidc-issuer needs --oidc-client-id, --oidc-users-file and --origin (the redirect URL is ORIGIN/oidc/callback)")
			return 2
		}
		sso = &approvals.OIDCConfig{Issuer: *oidcIssuer, ClientID: *oidcClient, Claim: *oidcClaim}
		if sso.Users, err = approvals.LoadOIDCUsersFile(*oidcUsers); err != nil {
			return fail(err)
		}
		if *oidcSecret != "" {
			if sso.ClientSecret, err = approvals.LoadClientSecretFile(*oidcSecret); err != nil {
				return fail(err)
			}
		}
	}
	var pkOpts *approvals.PasskeyOptions
	switch {
	case *passkeysFile != "" && *origin == "":
		fmt.Fprintln(stderr, "mcpsafe approvals serve: --passkeys-file needs --origin (passkeys are bound to the origin they were made on)")
		return 2
	case *passkeysFile != "":
		pkOpts = &approvals.PasskeyOptions{File: *passkeysFile, Tools: requirePasskey}
	case len(requirePasskey) > 0:
		fmt.Fprintln(stderr, "mcpsafe approvals serve: --require-passkey needs --passkeys-file")
		return 2
	}
	var key ed25519.PrivateKey
	if *signingKey != "" {
		if key, err = channel.LoadSigningKeyFile(*signingKey); err != nil {
			return fail(err)
		}
	}
	slackOpts, code := slackOptions(*slackToken, *slackSecret, *slackChannel, *slackGroup, *slackAPI, *origin, stderr)
	if code != 0 {
		return code
	}
	opts := approvals.ServiceOptions{
		SigningKey: key, OIDC: sso, Passkeys: pkOpts,
		Secret: secret, Approvers: approvers, Require: req, Store: *store, Origin: *origin, MaxWait: *maxWait, MaxPending: *maxPending,
		Hosts: append(listenHost(*listen), hosts...), Journals: journals,
		Logger: slog.New(slog.NewTextHandler(stderr, nil)),
		Slack:  slackOpts,
	}
	if *grantsLedger != "" {
		l, err := ledger.Open(context.Background(), *grantsLedger)
		if err != nil {
			return fail(err)
		}
		defer l.Close()
		ss := l.Standing()
		if ss == nil {
			return fail(fmt.Errorf("the ledger %s keeps no standing grants", *grantsLedger))
		}
		opts.Grants = ss
	}
	var m *metrics.Metrics
	if *metricsAddr != "" {
		m = metrics.New()
		opts.OnDecided = m.ChannelDecision
	}
	svc, err := approvals.NewService(opts)
	if err != nil {
		return fail(err)
	}
	defer svc.Close()
	if m != nil {
		m.SetPending(svc.Pending)
		addr, stopMetrics, err := m.Serve(context.Background(), *metricsAddr)
		if err != nil {
			return fail(err)
		}
		defer stopMetrics()
		fmt.Fprintf(stdout, "mcpsafe approvals: metrics on http://%s/metrics\n", addr)
	}

	l, err := net.Listen("tcp", *listen)
	if err != nil {
		return fail(err)
	}
	srv := mcphttp.NewHTTPServer(svc, mcphttp.DefaultHeaderTimeout, *bodyTimeout, approvalsMaxBody)
	scheme := "http"
	if *tlsCert != "" {
		scheme = "https"
	}
	fmt.Fprintf(stdout, "mcpsafe approvals: listening on %s://%s (%d approvers, store %s)\n", scheme, l.Addr(), len(approvers), approvals.StoreName(*store))
	if slackOpts != nil {
		fmt.Fprintf(stdout, "mcpsafe approvals: posting requests to Slack channel %s; set the Slack app's interactivity request URL to %s/slack/interactions\n", slackOpts.Channel, *origin)
	}

	// Waiting webhook calls end first. With a store no other replica
	// shares, their requests are withdrawn (their gates see no approval
	// and refuse them); with a shared one (PostgreSQL) the replica drains:
	// /readyz fails, new requests are refused 503, and each waiting gate is
	// answered "pending" and re-attaches through another replica.
	kept := "lost with the memory store"
	if *store != "memory" {
		kept = "kept in the store (a gate holding an approval_pending handle re-attaches after a restart)"
	}
	if err := serveUntilStopped(srv, l, *tlsCert, *tlsKey, stderr, func() {
		if svc.Shared() {
			svc.Drain()
			fmt.Fprintf(stderr, "mcpsafe approvals: draining: waiting gates are handed over to the other replicas; %d pending request(s) stay in the shared store\n", svc.Pending())
			svc.Close()
			return
		}
		n := svc.WithdrawWaiting(approvals.WithdrawnServiceStopped)
		fmt.Fprintf(stderr, "mcpsafe approvals: stopping: withdrew %d request(s) a gate was waiting on; %d other pending request(s) %s\n", n, svc.Pending(), kept)
		svc.Close()
	}); err != nil {
		return fail(err)
	}
	return 0
}

// serveUntilStopped serves srv on l (TLS when cert is set) until the
// process is told to stop (approvalsContext), then runs beforeShutdown if
// given and shuts srv down within 5 s. A second signal meanwhile exits at
// once.
func serveUntilStopped(srv *http.Server, l net.Listener, cert, key string, stderr io.Writer, beforeShutdown func()) error {
	ctx, stop := approvalsContext()
	defer stop()
	stopping, stopped := context.WithCancel(context.Background())
	defer stopped()
	errc := make(chan error, 1)
	go func() {
		if cert != "" {
			errc <- srv.ServeTLS(l, cert, key)
		} else {
			errc <- srv.Serve(l)
		}
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	exitOnSecondSignal(stopping, "mcpsafe", stderr)
	if beforeShutdown != nil {
		beforeShutdown()
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// listenHost is the host of a listen address when it names one (not the
// wildcard): clients that use the address itself are then served.
func listenHost(addr string) []string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return nil
	}
	return []string{host}
}

// approvalsMaxBody is above the webhook's own 256 KiB cap, so that the
// service, not the front, answers an oversized webhook body in its words.
const approvalsMaxBody = 1 << 20

// slackOptions reads the Slack flags: none (Slack off), or the token and
// signing secret files (0600, never the values themselves), the channel
// and --origin together. It returns an exit code when they do not fit.
func slackOptions(tokenFile, secretFile, channelID, group, apiURL, origin string, stderr io.Writer) (*approvals.SlackOptions, int) {
	if tokenFile == "" && secretFile == "" && channelID == "" && group == "" {
		return nil, 0
	}
	if tokenFile == "" || secretFile == "" || channelID == "" || origin == "" {
		fmt.Fprintln(stderr, "mcpsafe approvals serve: Slack approvals need --slack-bot-token-file, --slack-signing-secret-file, --slack-channel and --origin (Slack sends clicks to ORIGIN/slack/interactions)")
		return nil, 2
	}
	token, err := approvals.LoadSlackSecretFile("slack bot token file", tokenFile)
	if err != nil {
		fmt.Fprintln(stderr, "mcpsafe approvals serve:", err)
		return nil, 1
	}
	secret, err := approvals.LoadSlackSecretFile("slack signing secret file", secretFile)
	if err != nil {
		fmt.Fprintln(stderr, "mcpsafe approvals serve:", err)
		return nil, 1
	}
	return &approvals.SlackOptions{BotToken: token, SigningSecret: secret, Channel: channelID, Group: group, APIURL: apiURL}, 0
}
