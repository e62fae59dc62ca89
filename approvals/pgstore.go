package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/go-webauthn/webauthn/webauthn"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/internal/identity"
)

// pgStore keeps the service's state in a PostgreSQL database that any
// number of replicas share. Every step is one transaction: a request's row
// is locked (SELECT … FOR UPDATE) while its next state is decided, so two
// approvers on two replicas make one decision; votes are also rows with a
// unique (request, approver) key; a webhook signature is one unique
// insert, so a replay is refused on every replica. The clock is the
// database's (clock_timestamp()), never a replica's. Each write notifies
// the channel pgNotifyChannel, and every replica LISTENs on it, so a long
// poll on one replica ends when a decision is made on another.
type pgStore struct {
	pool *pgxpool.Pool
	cfg  *pgx.ConnConfig
	sess pgSessions

	stop     chan struct{}
	done     chan struct{}
	once     sync.Once
	onChange func(id string) // set by startListening
}

// pgNotifyChannel is the LISTEN/NOTIFY channel of request changes; the
// payload is the request id.
const pgNotifyChannel = "mcpsafe_approvals"

func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

func openPGStore(ctx context.Context, raw string) (*pgStore, error) {
	cfg, err := pgxpool.ParseConfig(raw)
	if err != nil {
		// pgx errors can echo the connection string; keep the password out.
		return nil, fmt.Errorf("channel: store %s: cannot parse the PostgreSQL URL", redactURL(raw))
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = storeTimeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("channel: store %s: %v", redactURL(raw), err)
	}
	p := &pgStore{pool: pool, cfg: cfg.ConnConfig.Copy(), stop: make(chan struct{}), done: make(chan struct{})}
	p.sess = pgSessions{p}
	mctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := migratePG(mctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("channel: store %s: %w", redactURL(raw), err)
	}
	return p, nil
}

// connLost reports whether err is the connection failing (a killed pooled
// connection, a restarted server) rather than an answer: a step that
// failed so before its commit did nothing and may be run again.
func connLost(err error) bool {
	var he *httpError
	if err == nil || errors.As(err, &he) || errors.Is(err, errNotFound) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if pgconn.SafeToRetry(err) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// admin_shutdown, crash_shutdown, cannot_connect_now
		return pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	return true // not an answer from the server: the connection broke
}

// errRaced: another replica inserted the same request between our read and
// our insert; the step runs again and finds it.
var errRaced = errors.New("raced")

// tx runs fn in one transaction. A connection lost before the commit means
// nothing was written: the step runs once more (on another connection of
// the pool). A commit whose outcome is unknown is not run again.
func (p *pgStore) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	for attempt := 0; ; attempt++ {
		committing := false
		err := func() error {
			tx, err := p.pool.Begin(ctx)
			if err != nil {
				return err
			}
			defer tx.Rollback(context.Background())
			if err := fn(tx); err != nil {
				return err
			}
			committing = true
			return tx.Commit(ctx)
		}()
		if err == nil {
			return nil
		}
		if attempt < 2 && errors.Is(err, errRaced) {
			continue
		}
		if attempt == 0 && !committing && connLost(err) && ctx.Err() == nil {
			continue
		}
		return storeErr(err)
	}
}

// read runs a read-only step, once more after a lost connection.
func (p *pgStore) read(ctx context.Context, fn func() error) error {
	err := fn()
	if err != nil && connLost(err) && ctx.Err() == nil {
		err = fn()
	}
	return storeErr(err)
}

func scanRecord(data string) (record, error) {
	var r record
	if err := json.Unmarshal([]byte(data), &r); err != nil {
		return r, fmt.Errorf("corrupt record: %w", err)
	}
	return r, nil
}

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// leaseOnly reports whether next differs from cur only in who holds the
// request for a long poll: nobody is told of such a change (the pages
// show nothing of it, and each renewal would refresh every open page).
func leaseOnly(cur, next *record) bool {
	a, b := *cur, *next
	a.PollBy, a.PollUntil, b.PollBy, b.PollUntil = "", time.Time{}, "", time.Time{}
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// write stores r (insert or update) and, unless quiet, notifies the
// replicas.
func (p *pgStore) write(ctx context.Context, tx pgx.Tx, r *record, insert bool, quiet ...bool) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	var pollUntil any
	if r.PollBy != "" {
		pollUntil = r.PollUntil
	}
	if insert {
		tag, err := tx.Exec(ctx, `INSERT INTO mcpsafe_approvals_requests (id, status, received, deadline, decided_at, poll_until, data)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING`,
			r.Req.ID, r.Status, r.Received, r.Deadline, nullTime(r.DecidedAt), pollUntil, string(data))
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			return errRaced
		}
	} else if _, err := tx.Exec(ctx, `UPDATE mcpsafe_approvals_requests SET status = $2, decided_at = $3, poll_until = $4, data = $5 WHERE id = $1`,
		r.Req.ID, r.Status, nullTime(r.DecidedAt), pollUntil, string(data)); err != nil {
		return err
	}
	if len(quiet) > 0 && quiet[0] {
		return nil
	}
	_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, pgNotifyChannel, r.Req.ID)
	return err
}

// addVotes inserts the votes next has beyond cur: the unique key refuses
// a second vote of one approver, whatever replica it came through.
func addVotes(ctx context.Context, tx pgx.Tx, cur, next *record) error {
	for _, v := range next.Approvals[min(len(cur.Approvals), len(next.Approvals)):] {
		k, err := identity.Key(v.By)
		if err != nil {
			k = v.By
		}
		tag, err := tx.Exec(ctx, `INSERT INTO mcpsafe_approvals_votes (request_id, approver) VALUES ($1, $2) ON CONFLICT DO NOTHING`, next.Req.ID, k)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			return fail(409, "%s already approved", v.By)
		}
	}
	return nil
}

func dbNow(ctx context.Context, tx pgx.Tx) (time.Time, error) {
	var now time.Time
	err := tx.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&now)
	return now, err
}

// lock reads request id with its row locked; ok is false when there is none.
func lock(ctx context.Context, tx pgx.Tx, id string) (record, bool, error) {
	var data string
	err := tx.QueryRow(ctx, `SELECT data FROM mcpsafe_approvals_requests WHERE id = $1 FOR UPDATE`, id).Scan(&data)
	if errors.Is(err, pgx.ErrNoRows) {
		return record{}, false, nil
	}
	if err != nil {
		return record{}, false, err
	}
	r, err := scanRecord(data)
	return r, err == nil, err
}

func (p *pgStore) admit(ctx context.Context, id string, create func(time.Time, int) (*record, error), again func(record, time.Time) (*record, error)) (record, error) {
	var out record
	err := p.tx(ctx, func(tx pgx.Tx) error {
		cur, ok, err := lock(ctx, tx, id)
		if err != nil {
			return err
		}
		now, err := dbNow(ctx, tx)
		if err != nil {
			return err
		}
		if ok {
			out = cur
			next, err := again(cur, now)
			if err != nil || next == nil {
				return err
			}
			if err := p.write(ctx, tx, next, false, leaseOnly(&cur, next)); err != nil {
				return err
			}
			out = *next
			return nil
		}
		var pending int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM mcpsafe_approvals_requests WHERE status = 'pending'`).Scan(&pending); err != nil {
			return err
		}
		next, err := create(now, pending)
		if err != nil || next == nil {
			return err
		}
		if err := p.write(ctx, tx, next, true); err != nil {
			return err
		}
		out = *next
		return nil
	})
	return out, err
}

func (p *pgStore) update(ctx context.Context, id string, fn func(record, time.Time) (*record, error)) (record, error) {
	var out record
	err := p.tx(ctx, func(tx pgx.Tx) error {
		cur, ok, err := lock(ctx, tx, id)
		if err != nil {
			return err
		}
		if !ok {
			return errNotFound
		}
		out = cur
		now, err := dbNow(ctx, tx)
		if err != nil {
			return err
		}
		next, err := fn(cur, now)
		if err != nil || next == nil {
			return err
		}
		if err := addVotes(ctx, tx, &cur, next); err != nil {
			return err
		}
		if err := p.write(ctx, tx, next, false, leaseOnly(&cur, next)); err != nil {
			return err
		}
		out = *next
		return nil
	})
	return out, err
}

func (p *pgStore) get(ctx context.Context, id string) (record, error) {
	var r record
	err := p.read(ctx, func() error {
		var data string
		err := p.pool.QueryRow(ctx, `SELECT data FROM mcpsafe_approvals_requests WHERE id = $1`, id).Scan(&data)
		if errors.Is(err, pgx.ErrNoRows) {
			return errNotFound
		}
		if err != nil {
			return err
		}
		r, err = scanRecord(data)
		return err
	})
	return r, err
}

func (p *pgStore) query(ctx context.Context, sql string, args ...any) ([]record, error) {
	var out []record
	err := p.read(ctx, func() error {
		out = nil
		rows, err := p.pool.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var data string
			if err := rows.Scan(&data); err != nil {
				return err
			}
			r, err := scanRecord(data)
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	return out, err
}

func (p *pgStore) pending(ctx context.Context, offset, limit int) ([]record, int, error) {
	total, err := p.countPending(ctx)
	if err != nil || limit == 0 {
		return nil, total, err
	}
	lim := any(nil) // LIMIT NULL: all
	if limit > 0 {
		lim = limit
	}
	out, err := p.query(ctx, `SELECT data FROM mcpsafe_approvals_requests WHERE status = 'pending' ORDER BY received, id OFFSET $1 LIMIT $2`, max(offset, 0), lim)
	return out, total, err
}

func (p *pgStore) history(ctx context.Context, limit int) ([]record, error) {
	return p.query(ctx, `SELECT data FROM mcpsafe_approvals_requests WHERE status <> 'pending' ORDER BY decided_at DESC, id LIMIT $1`, limit)
}

func (p *pgStore) all(ctx context.Context) ([]record, error) {
	return p.query(ctx, `SELECT data FROM mcpsafe_approvals_requests`)
}

func (p *pgStore) countPending(ctx context.Context) (int, error) {
	var n int
	err := p.read(ctx, func() error {
		return p.pool.QueryRow(ctx, `SELECT count(*) FROM mcpsafe_approvals_requests WHERE status = 'pending'`).Scan(&n)
	})
	return n, err
}

// expire moves overdue requests in batches; rows another replica is
// expiring at the same moment are skipped (SKIP LOCKED), so each request
// expires once.
func (p *pgStore) expire(ctx context.Context) ([]record, error) {
	var out []record
	err := p.tx(ctx, func(tx pgx.Tx) error {
		out = nil
		rows, err := tx.Query(ctx, `SELECT data FROM mcpsafe_approvals_requests
			WHERE status = 'pending' AND deadline <= clock_timestamp() ORDER BY deadline LIMIT 500 FOR UPDATE SKIP LOCKED`)
		if err != nil {
			return err
		}
		var due []record
		for rows.Next() {
			var data string
			if err := rows.Scan(&data); err != nil {
				rows.Close()
				return err
			}
			r, err := scanRecord(data)
			if err != nil {
				rows.Close()
				return err
			}
			due = append(due, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(due) == 0 {
			return err
		}
		now, err := dbNow(ctx, tx)
		if err != nil {
			return err
		}
		for _, r := range due {
			r.Status, r.DecidedAt = channel.StatusExpired, now
			if err := p.write(ctx, tx, &r, false); err != nil {
				return err
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

func (p *pgStore) prune(ctx context.Context, retention time.Duration) error {
	return p.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM mcpsafe_approvals_requests WHERE status <> 'pending'
			AND decided_at < clock_timestamp() - make_interval(secs => $1) AND (poll_until IS NULL OR poll_until < clock_timestamp())`, retention.Seconds()); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM mcpsafe_approvals_signatures WHERE until < clock_timestamp()`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM mcpsafe_approvals_flows WHERE expires < clock_timestamp()`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM mcpsafe_approvals_sessions WHERE expires < clock_timestamp()`)
		return err
	})
}

// sawSignature is one insert: of replicas racing with the same signature,
// exactly one inserts it. A row past its window counts as absent, so
// the sweep's timing cannot matter.
func (p *pgStore) sawSignature(ctx context.Context, sig string, until time.Time) (bool, error) {
	fresh := false
	err := p.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO mcpsafe_approvals_signatures AS s (sig, until) VALUES ($1, $2)
			ON CONFLICT (sig) DO UPDATE SET until = EXCLUDED.until WHERE s.until < clock_timestamp()`, sig, until)
		if err != nil {
			return err
		}
		fresh = tag.RowsAffected() == 1
		return nil
	})
	return fresh, err
}

func (p *pgStore) sessions() sessionStore { return p.sess }
func (p *pgStore) flows() flowStore       { return p }
func (p *pgStore) passkeys() passkeyStore { return p }

func (p *pgStore) putFlow(ctx context.Context, kind, key string, value []byte, expires time.Time, limit int) error {
	return p.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM mcpsafe_approvals_flows WHERE kind = $1 AND expires < clock_timestamp()`, kind); err != nil {
			return err
		}
		if limit > 0 {
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM mcpsafe_approvals_flows WHERE kind = $1 AND key <> $2`, kind, key).Scan(&n); err != nil {
				return err
			}
			if n >= limit {
				return fail(503, "%v", errTooManyFlows)
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO mcpsafe_approvals_flows (kind, key, value, expires) VALUES ($1, $2, $3, $4)
			ON CONFLICT (kind, key) DO UPDATE SET value = EXCLUDED.value, expires = EXCLUDED.expires`, kind, key, value, expires)
		return err
	})
}

// takeFlow is one DELETE … RETURNING: of replicas finishing the same
// ceremony at once, one gets it.
func (p *pgStore) takeFlow(ctx context.Context, kind, key string) ([]byte, bool, error) {
	var v []byte
	ok := false
	err := p.tx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `DELETE FROM mcpsafe_approvals_flows WHERE kind = $1 AND key = $2 RETURNING value, expires > clock_timestamp()`, kind, key).Scan(&v, &ok)
		if errors.Is(err, pgx.ErrNoRows) {
			ok = false
			return nil
		}
		return err
	})
	return v, ok, err
}

func (p *pgStore) addPasskey(ctx context.Context, k channel.RegisteredPasskey, flags webauthn.CredentialFlags) error {
	data, err := json.Marshal(k)
	if err != nil {
		return err
	}
	fl, err := json.Marshal(flags)
	if err != nil {
		return err
	}
	return p.tx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO mcpsafe_approvals_passkeys (credential_id, approver, data, flags) VALUES ($1, $2, $3, $4)
			ON CONFLICT (credential_id) DO NOTHING`, k.CredentialID, k.Approver, string(data), string(fl))
		return err
	})
}

func (p *pgStore) listPasskeys(ctx context.Context) ([]channel.RegisteredPasskey, map[string]webauthn.CredentialFlags, error) {
	var keys []channel.RegisteredPasskey
	flags := map[string]webauthn.CredentialFlags{}
	err := p.read(ctx, func() error {
		keys, flags = nil, map[string]webauthn.CredentialFlags{}
		rows, err := p.pool.Query(ctx, `SELECT data, flags FROM mcpsafe_approvals_passkeys ORDER BY registered, credential_id`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var data, fl string
			if err := rows.Scan(&data, &fl); err != nil {
				return err
			}
			var k channel.RegisteredPasskey
			var f webauthn.CredentialFlags
			if err := json.Unmarshal([]byte(data), &k); err != nil {
				return err
			}
			if err := json.Unmarshal([]byte(fl), &f); err != nil {
				return err
			}
			keys = append(keys, k)
			flags[k.CredentialID] = f
		}
		return rows.Err()
	})
	return keys, flags, err
}
func (p *pgStore) shared() bool { return true }

func (p *pgStore) ping(ctx context.Context) error {
	return p.read(ctx, func() error {
		var one int
		return p.pool.QueryRow(ctx, `SELECT 1`).Scan(&one)
	})
}

func (p *pgStore) close() error {
	p.once.Do(func() {
		close(p.stop)
		if p.onChange != nil {
			<-p.done
		}
		p.pool.Close()
	})
	return nil
}

// startListening LISTENs for request changes on a connection of its own
// and calls onChange with each changed id. After a lost connection it
// connects again and calls onChange("") (every waiter re-reads), so a
// notification missed meanwhile costs nothing but that re-read.
func (p *pgStore) startListening(onChange func(id string)) {
	p.onChange = onChange
	go func() {
		defer close(p.done)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			<-p.stop
			cancel()
		}()
		backoff := 100 * time.Millisecond
		for ctx.Err() == nil {
			if err := p.listen(ctx, onChange); err == nil || ctx.Err() != nil {
				return
			}
			onChange("")
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 2*time.Second)
		}
	}()
}

func (p *pgStore) listen(ctx context.Context, onChange func(string)) error {
	conn, err := pgx.ConnectConfig(ctx, p.cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `LISTEN `+pgNotifyChannel); err != nil {
		return err
	}
	onChange("") // anything missed while not listening
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		onChange(n.Payload)
	}
}

// pgSessions keeps login sessions in the shared database: a login on one
// replica is a login on all.
type pgSessions struct{ p *pgStore }

func (s pgSessions) putSession(ctx context.Context, key string, v session) error {
	return s.p.tx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO mcpsafe_approvals_sessions (key, name, csrf, expires) VALUES ($1, $2, $3, $4)`,
			[]byte(key), v.name, v.csrf, v.expires)
		return err
	})
}

func (s pgSessions) getSession(ctx context.Context, key string) (session, bool, error) {
	var v session
	ok := false
	err := s.p.read(ctx, func() error {
		err := s.p.pool.QueryRow(ctx, `SELECT name, csrf, expires FROM mcpsafe_approvals_sessions WHERE key = $1 AND expires > clock_timestamp()`,
			[]byte(key)).Scan(&v.name, &v.csrf, &v.expires)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		ok = err == nil
		return err
	})
	return v, ok, err
}

func (s pgSessions) endSession(ctx context.Context, key string) error {
	return s.p.tx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM mcpsafe_approvals_sessions WHERE key = $1`, []byte(key))
		return err
	})
}
