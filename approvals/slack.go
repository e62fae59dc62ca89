package approvals

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/mcpsafe/mcpsafe/internal/identity"
	"github.com/mcpsafe/mcpsafe/internal/loopback"
)

// SlackOptions turns on Slack approvals: every request is posted to
// Channel with Approve and Deny buttons, and Slack sends the clicks to
// /slack/interactions, where they are verified and decided like a click
// on the service's own page (the same N-of-M, the same separation of
// duties, the same signed answer to the gate).
type SlackOptions struct {
	// BotToken is the Slack app's bot token (xoxb-…; scopes chat:write and,
	// with Group, usergroups:read). From a 0600 file (LoadSlackSecretFile).
	BotToken string
	// SigningSecret is the Slack app's signing secret: it verifies that a
	// click came from Slack. From a 0600 file (LoadSlackSecretFile).
	SigningSecret string
	// Channel is the channel the requests are posted to (an id such as
	// C0123ABCD; the bot must be a member).
	Channel string
	// APIURL is the Slack Web API's base URL (default
	// https://slack.com/api/); tests point it at a local stand-in. Plain
	// http only on a loopback address.
	APIURL string
	// Group, when set, is a Slack user group id (S0123…) whose members are
	// approvers too, checked at click time (usergroups.users.list); they
	// decide as "slack-<USER ID>". People in the approvers file with a slack
	// id are approvers whatever the group says, under their own names.
	// A member's approval counts only when the request's principal is
	// matched to another Slack account (notRequester); with email
	// principals the app needs users:read and users:read.email.
	Group string
	// GroupCacheTTL is how long one answer of usergroups.users.list is
	// used (default and at most one minute): a person removed from the
	// group can still click for at most this long.
	GroupCacheTTL time.Duration
	// RetryBase is the wait before the first retry of a post or update
	// Slack did not take (default 2 s); it doubles on each failure up to 5
	// minutes, and a 429's Retry-After is always honoured.
	RetryBase time.Duration
	// HTTPClient calls the Slack API (default: a client with a 10 s
	// timeout).
	HTTPClient *http.Client
}

const (
	slackDefaultAPI       = "https://slack.com/api/"
	slackInteractionsPath = "/slack/interactions"
	slackMaxGroupTTL      = time.Minute
	slackMaxRetry         = 5 * time.Minute
	// slackGroupPrefix names an approver known only from the Slack group.
	slackGroupPrefix = "slack-"
)

var (
	slackChannelRE = regexp.MustCompile(`^[A-Z0-9]{2,32}$`)
	slackUserRE    = regexp.MustCompile(`^[UW][A-Z0-9]{2,32}$`)
	slackGroupRE   = regexp.MustCompile(`^S[A-Z0-9]{2,32}$`)
)

// LoadSlackSecretFile reads the bot token or the signing secret: one
// non-empty line in a file that group and others cannot read. The value is
// never taken from a flag (it would show in ps and shell history) and never
// logged.
func LoadSlackSecretFile(what, path string) (string, error) {
	data, err := readPrivateFile(what, path)
	if err != nil {
		return "", err
	}
	s := strings.TrimRight(string(data), "\r\n")
	if s == "" || strings.ContainsAny(s, "\r\n \t") {
		return "", fmt.Errorf("channel: %s %s must hold exactly one non-empty line without spaces", what, path)
	}
	return s, nil
}

// slackBridge is the service's Slack side: it announces requests and their
// outcomes (slack_delivery.go) and takes clicks (slack_interactions.go).
// It decides nothing itself: a click is one call of Service.decideVote.
// What each request's message is and shows lives in the request's record
// (record.Slack), so replicas sharing a store share it; the bridge keeps
// only a schedule of which requests to look at next.
type slackBridge struct {
	s    *Service
	opts SlackOptions
	api  *slack.Client
	// users maps a Slack user id to the approver it is (approvers file).
	users map[string]string
	kick  chan struct{}
	now   func() time.Time // the group cache's clock; tests move it

	mu      sync.Mutex
	group   []string // members of opts.Group as last read
	groupAt time.Time
	// due is when to look at a request's message next (a change here: at
	// once; one heard from another replica: after slackTakeOver; a retry:
	// when it is due). sweepAt is when to look at every request.
	due     map[string]time.Time
	sweepAt time.Time
}

func newSlackBridge(s *Service, o SlackOptions) (*slackBridge, error) {
	switch {
	case o.BotToken == "" || o.SigningSecret == "":
		return nil, errors.New("channel: Slack needs the bot token and the signing secret (--slack-bot-token-file, --slack-signing-secret-file)")
	case !slackChannelRE.MatchString(o.Channel):
		return nil, fmt.Errorf("channel: Slack channel %q: give the channel's id (C0123ABCD: in Slack, the channel's details, at the bottom)", o.Channel)
	case s.opts.Origin == "":
		return nil, errors.New("channel: Slack needs --origin: each message links to its request's page on the service")
	case o.Group != "" && !slackGroupRE.MatchString(o.Group):
		return nil, fmt.Errorf("channel: Slack user group %q: give the group's id (S0123ABCD)", o.Group)
	}
	if o.APIURL == "" {
		o.APIURL = slackDefaultAPI
	}
	u, err := url.Parse(o.APIURL)
	if err != nil || u.Host == "" || !strings.HasSuffix(u.Path, "/") || (u.Scheme != "https" && !(u.Scheme == "http" && loopback.Host(u.Hostname()))) {
		return nil, fmt.Errorf("channel: Slack API URL %q: want https://…/ ending in a slash (plain http only on loopback)", o.APIURL)
	}
	if o.GroupCacheTTL <= 0 || o.GroupCacheTTL > slackMaxGroupTTL {
		o.GroupCacheTTL = slackMaxGroupTTL
	}
	setDefault(&o.RetryBase, 2*time.Second)
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	users := map[string]string{}
	for _, a := range s.opts.Approvers {
		if o.Group != "" {
			if k, _ := identity.Key(a.Name); strings.HasPrefix(k, slackGroupPrefix) {
				return nil, fmt.Errorf("channel: approver %s: names starting with %q are the Slack group's members; rename it", a.Name, slackGroupPrefix)
			}
		}
		if a.Slack != "" {
			users[a.Slack] = a.Name
		}
	}
	if len(users) == 0 && o.Group == "" {
		return nil, errors.New("channel: Slack has no approvers: give approvers a slack id in the approvers file (name:hash slack=U0123ABCD), or a user group (--slack-group)")
	}
	return &slackBridge{
		s: s, opts: o, users: users,
		api:  slack.New(o.BotToken, slack.OptionAPIURL(o.APIURL), slack.OptionHTTPClient(o.HTTPClient)),
		kick: make(chan struct{}, 1),
		now:  time.Now,
		due:  map[string]time.Time{},
	}, nil
}

// errNotApprover: the Slack user is neither mapped nor in the group.
var errNotApprover = errors.New("not an approver")

// approverFor returns the approver name a Slack user decides as. A user in
// the approvers file is that approver; else a member of the group (read at
// most GroupCacheTTL ago) is "slack-<id>". Anyone else: errNotApprover. A
// group that cannot be read is an error: nobody is taken on trust.
func (b *slackBridge) approverFor(ctx context.Context, user string) (string, error) {
	if !slackUserRE.MatchString(user) {
		return "", errNotApprover
	}
	if name, ok := b.users[user]; ok {
		return name, nil
	}
	if b.opts.Group == "" {
		return "", errNotApprover
	}
	members, err := b.groupMembers(ctx)
	if err != nil {
		return "", err
	}
	if !slices.Contains(members, user) {
		return "", errNotApprover
	}
	return slackGroupPrefix + user, nil
}

// Why a group member's approval is refused before it is decided.
var (
	errRequester   = errors.New("the requester")
	errUnmatchable = errors.New("the requester is not matched to a Slack account")
)

// notRequester checks that a member known only by the user group is not
// the requester of request id before their approval is counted: the
// service's own separation-of-duties check compares approver names with
// the principal, and "slack-<ID>" compares with no principal. It holds
// when the principal is an approvers-file approver with a Slack id (the
// requester's account is that one), or when the principal is an email
// address and Slack gives the clicker's account email (users.info, scope
// users:read.email) to compare with it. Anything else cannot tell the
// requester from someone else, and is refused (errUnmatchable).
func (b *slackBridge) notRequester(ctx context.Context, user, id string) error {
	sctx, cancel := storeCtx()
	rec, err := b.s.st.get(sctx, id)
	cancel()
	if errors.Is(err, errNotFound) {
		return nil // decideVote says so
	}
	if err != nil {
		return err
	}
	pk, err := identity.Key(rec.Req.Principal)
	if err != nil {
		return errUnmatchable
	}
	for sid, name := range b.users {
		if k, _ := identity.Key(name); k == pk {
			if sid == user {
				return errRequester
			}
			return nil
		}
	}
	if !strings.Contains(pk, "@") {
		return errUnmatchable
	}
	u, err := b.api.GetUserInfoContext(ctx, user)
	if err != nil {
		return fmt.Errorf("reading the Slack account of %s: %w", user, err)
	}
	switch ek, kerr := identity.Key(u.Profile.Email); {
	case u.ID != user || u.Profile.Email == "" || kerr != nil:
		return errUnmatchable // no email without users:read.email
	case ek == pk:
		return errRequester
	}
	return nil
}

func (b *slackBridge) groupMembers(ctx context.Context) ([]string, error) {
	b.mu.Lock()
	if b.group != nil && b.now().Sub(b.groupAt) < b.opts.GroupCacheTTL {
		defer b.mu.Unlock()
		return b.group, nil
	}
	b.mu.Unlock()
	members, err := b.api.GetUserGroupMembersContext(ctx, b.opts.Group)
	if err != nil {
		return nil, fmt.Errorf("reading the Slack user group %s: %w", b.opts.Group, err)
	}
	if members == nil {
		members = []string{}
	}
	b.mu.Lock()
	b.group, b.groupAt = members, b.now()
	b.mu.Unlock()
	return members, nil
}

// requestLink is the request's card on the service's page.
func (b *slackBridge) requestLink(id string) string {
	return b.s.opts.Origin + "/#req-" + url.PathEscape(id)
}

// poke wakes the delivery loop.
func (b *slackBridge) poke() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}
