package approvals

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpsafe/mcpsafe/channel"
)

// record is one approval request as the service keeps it.
type record struct {
	Req        channel.WireRequest `json:"req"`
	BodyDigest string              `json:"body_digest"` // identifies the exact request for a re-attach
	Received   time.Time           `json:"received"`
	Deadline   time.Time           `json:"deadline"`
	Required   int                 `json:"required"`
	Status     string              `json:"status"`
	Approvals  []vote              `json:"approvals,omitempty"`
	DeniedBy   *vote               `json:"denied_by,omitempty"`
	DecidedAt  time.Time           `json:"decided_at,omitzero"`
	Delivered  bool                `json:"delivered"` // the decision went out to a webhook caller: single use
	// Withdrawn says why the gate took the request back (caller_gone,
	// timed_out); empty unless it did.
	Withdrawn string `json:"withdrawn,omitempty"`
	// Grant is the standing grant the approvers chose (one of Req.Grants);
	// empty for this call alone. Every approval vote names the same one.
	Grant string `json:"grant,omitempty"`
	// PollBy and PollUntil say that a webhook caller is attached to the
	// request (on any replica) and until when its lease runs: the replica
	// holding the long poll renews it, so a replica that died leaves a
	// lease that runs out and the gate can re-attach elsewhere.
	PollBy    string    `json:"poll_by,omitempty"`
	PollUntil time.Time `json:"poll_until,omitzero"`
	// Attestation is the signed statement delivered with an approval
	// (service_attest.go): kept, so the one decision has one attestation.
	Attestation *channel.Attestation `json:"attestation,omitempty"`
	// Slack is the request's Slack message, when Slack approvals are on
	// (slack_delivery.go): kept with the request, so every replica and
	// every store sees one message per request, and its claims are made
	// with the request locked.
	Slack *slackRef `json:"slack,omitempty"`
}

// polled reports whether a webhook caller holds the request at now.
func (r *record) polled(now time.Time) bool { return r.PollBy != "" && now.Before(r.PollUntil) }

type vote struct {
	By   string    `json:"by"`
	At   time.Time `json:"at"`
	Note string    `json:"note,omitempty"`
	// Passkey is the approver's verified assertion for this call, when the
	// approval was made with one.
	Passkey *channel.PasskeyProof `json:"passkey,omitempty"`
	// Via names the path the vote came by when it was not the service's
	// own page or API: "slack" (a click in Slack, slack_interactions.go).
	Via string `json:"via,omitempty"`
}

// store is where the service's state lives: the source of truth for every
// step of a decision. Each method is one atomic step against it (in the
// PostgreSQL store, one transaction with the request's row locked), so
// replicas sharing a store make one decision per request. A method that
// cannot reach the store returns an error wrapping errStore, and the
// service answers 503 and approves nothing.
//
// The clock is the store's: every callback is given the store's now (the
// database's now() for PostgreSQL), never a replica's.
type store interface {
	// admit creates request id with create (given now and how many
	// requests are pending), or, when id exists, calls again with it.
	// Either callback returns the record to write, nil to write nothing,
	// or an error (nothing written). admit returns the record as stored.
	admit(ctx context.Context, id string, create func(now time.Time, pending int) (*record, error), again func(cur record, now time.Time) (*record, error)) (record, error)
	// update runs fn on request id with the request locked; fn returns
	// the record to write, nil to write nothing, or an error (nothing
	// written). errNotFound when there is no such request.
	update(ctx context.Context, id string, fn func(cur record, now time.Time) (*record, error)) (record, error)
	get(ctx context.Context, id string) (record, error)
	// pending lists pending requests oldest first (by Received, then id):
	// limit of them from offset (limit < 0: all), and how many there are.
	pending(ctx context.Context, offset, limit int) ([]record, int, error)
	// history lists decided requests, the newest decision first.
	history(ctx context.Context, limit int) ([]record, error)
	all(ctx context.Context) ([]record, error)
	// expire moves every pending request whose deadline has passed to
	// expired and returns those it moved (each once, across replicas).
	expire(ctx context.Context) ([]record, error)
	// prune deletes requests decided longer than retention ago that no
	// webhook caller holds.
	prune(ctx context.Context, retention time.Duration) error
	countPending(ctx context.Context) (int, error)
	// sawSignature records a webhook signature until until; fresh is
	// false when it was recorded already (a replay).
	sawSignature(ctx context.Context, sig string, until time.Time) (fresh bool, err error)
	sessions() sessionStore
	flows() flowStore
	// passkeys is nil when passkeys live in --passkeys-file.
	passkeys() passkeyStore
	// shared reports whether other processes may use the store at once
	// (replicas): a stopping replica then hands its waiting gates over
	// instead of withdrawing their requests.
	shared() bool
	ping(ctx context.Context) error
	close() error
}

// sessionStore keeps browser login sessions, keyed by the SHA-256 of the
// cookie value.
type sessionStore interface {
	putSession(ctx context.Context, key string, s session) error
	getSession(ctx context.Context, key string) (session, bool, error)
	endSession(ctx context.Context, key string) error
}

// errStore marks a store that could not be reached or written.
var errStore = errors.New("store unavailable")

func storeErr(err error) error {
	if err == nil || errors.Is(err, errStore) || errors.Is(err, errNotFound) {
		return err
	}
	var he *httpError
	if errors.As(err, &he) {
		return err
	}
	return fmt.Errorf("%w: %v", errStore, err)
}

// openStore parses a store spec: "" or "memory" keeps state in memory;
// "file:PATH" keeps it in an SQLite database at PATH; "postgres://…" or
// "postgresql://…" in a PostgreSQL database that replicas share.
func openStore(spec string) (store, error) {
	switch {
	case spec == "" || spec == "memory":
		return newLocalStore(nil)
	case strings.HasPrefix(spec, "file:"):
		path := strings.TrimPrefix(spec, "file:")
		if path == "" {
			return nil, errors.New("channel: store file: needs a path")
		}
		db, err := openSQLite(path)
		if err != nil {
			return nil, err
		}
		return newLocalStore(db)
	case strings.HasPrefix(spec, "postgres://") || strings.HasPrefix(spec, "postgresql://"):
		return openPGStore(context.Background(), spec)
	default:
		return nil, fmt.Errorf("channel: unknown store %q (want memory, file:PATH or postgres://…)", spec)
	}
}

// StoreName is a store spec as it may be logged: a PostgreSQL URL's
// password is hidden.
func StoreName(spec string) string {
	if strings.HasPrefix(spec, "postgres://") || strings.HasPrefix(spec, "postgresql://") {
		return redactURL(spec)
	}
	return spec
}
