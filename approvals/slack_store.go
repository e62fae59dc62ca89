package approvals

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"
)

// slackMsg is what the service keeps about one request's Slack message,
// beside the request (never inside it: the record is the decision, this is
// only its announcement).
type slackMsg struct {
	ID      string
	Channel string // where the message is; "" until posted
	TS      string // its timestamp (Slack's message id); "" until posted
	// Shown is the state the message shows (slackState of the record it
	// was last written from): the message is updated when it differs.
	Shown string
	// Tries counts failed posts or updates in a row; NextTry is when the
	// next may start; LastError says what the last failure was.
	Tries     int
	NextTry   time.Time
	LastError string
}

// slackStore keeps slackMsg rows so that every replica sharing the store
// sees one message per request. The service's store implements it beside
// store (memory and SQLite here; a shared database adds the same methods).
// Every "claim" is atomic in the store: of two replicas racing, one wins.
type slackStore interface {
	// slackGet returns the row for id, if there is one.
	slackGet(id string) (slackMsg, bool, error)
	// slackClaimPost claims the right to post id's message until
	// now+lease: true if no message was posted, no other claim is live and
	// no retry is waiting (NextTry <= now).
	slackClaimPost(id string, now time.Time, lease time.Duration) (bool, error)
	// slackPosted records the posted message and what it shows, and ends
	// the claim.
	slackPosted(id, channel, ts, shown string) error
	// slackFailed records a failed post or update and when to try again,
	// and ends the claim; shown is what the message shows now (unchanged by
	// a failed update).
	slackFailed(id string, tries int, next time.Time, lastErr, shown string) error
	// slackClaimShown moves the message of id from showing from to showing
	// to: true for the one caller that made the move (it then updates the
	// message in Slack, and calls slackFailed with from if that fails).
	slackClaimShown(id, from, to string) (bool, error)
	// slackForget drops the row of a request that is gone from the store.
	slackForget(id string) error
}

// memSlack is the memory store's slackStore (memStore.slack).
type memSlack struct {
	mu    sync.Mutex
	rows  map[string]*slackMsg
	lease map[string]time.Time
}

func (m *memStore) slackRows() *memSlack {
	m.slackOnce.Do(func() { m.slack = &memSlack{rows: map[string]*slackMsg{}, lease: map[string]time.Time{}} })
	return m.slack
}

func (m *memStore) slackGet(id string) (slackMsg, bool, error) {
	s := m.slackRows()
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.rows[id]; ok {
		return *r, true, nil
	}
	return slackMsg{}, false, nil
}

func (m *memStore) slackClaimPost(id string, now time.Time, lease time.Duration) (bool, error) {
	s := m.slackRows()
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rows[id]
	if ok && (r.TS != "" || now.Before(r.NextTry)) {
		return false, nil
	}
	if until, live := s.lease[id]; live && now.Before(until) {
		return false, nil
	}
	if !ok {
		s.rows[id] = &slackMsg{ID: id}
	}
	s.lease[id] = now.Add(lease)
	return true, nil
}

func (m *memStore) slackPosted(id, channel, ts, shown string) error {
	s := m.slackRows()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows[id] = &slackMsg{ID: id, Channel: channel, TS: ts, Shown: shown}
	delete(s.lease, id)
	return nil
}

func (m *memStore) slackFailed(id string, tries int, next time.Time, lastErr, shown string) error {
	s := m.slackRows()
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rows[id]
	if !ok {
		r = &slackMsg{ID: id}
		s.rows[id] = r
	}
	r.Tries, r.NextTry, r.LastError, r.Shown = tries, next, lastErr, shown
	delete(s.lease, id)
	return nil
}

func (m *memStore) slackClaimShown(id, from, to string) (bool, error) {
	s := m.slackRows()
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rows[id]
	if !ok || r.TS == "" || r.Shown != from {
		return false, nil
	}
	r.Shown = to
	return true, nil
}

func (m *memStore) slackForget(id string) error {
	s := m.slackRows()
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.rows, id)
	delete(s.lease, id)
	return nil
}

// The SQLite store's slackStore: one row per request in slack_messages,
// created when Slack is turned on. Times are unix milliseconds.

func (s *sqliteStore) slackInit() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS slack_messages (
		id TEXT PRIMARY KEY, channel TEXT NOT NULL DEFAULT '', ts TEXT NOT NULL DEFAULT '',
		shown TEXT NOT NULL DEFAULT '', tries INTEGER NOT NULL DEFAULT 0, next_try INTEGER NOT NULL DEFAULT 0,
		last_error TEXT NOT NULL DEFAULT '', lease INTEGER NOT NULL DEFAULT 0)`)
	if err != nil {
		return fmt.Errorf("channel: store: %w", err)
	}
	return nil
}

func (s *sqliteStore) slackGet(id string) (slackMsg, bool, error) {
	m := slackMsg{ID: id}
	var next int64
	err := s.db.QueryRow(`SELECT channel, ts, shown, tries, next_try, last_error FROM slack_messages WHERE id = ?`, id).
		Scan(&m.Channel, &m.TS, &m.Shown, &m.Tries, &next, &m.LastError)
	if errors.Is(err, sql.ErrNoRows) {
		return slackMsg{}, false, nil
	}
	if err != nil {
		return slackMsg{}, false, fmt.Errorf("channel: store: %w", err)
	}
	if next != 0 {
		m.NextTry = time.UnixMilli(next)
	}
	return m, true, nil
}

func (s *sqliteStore) slackClaimPost(id string, now time.Time, lease time.Duration) (bool, error) {
	t := now.UnixMilli()
	res, err := s.db.Exec(`INSERT INTO slack_messages (id, lease) VALUES (?, ?)
		ON CONFLICT(id) DO UPDATE SET lease = excluded.lease
		WHERE slack_messages.ts = '' AND slack_messages.lease <= ? AND slack_messages.next_try <= ?`,
		id, now.Add(lease).UnixMilli(), t, t)
	return oneRow(res, err)
}

func (s *sqliteStore) slackPosted(id, channel, ts, shown string) error {
	_, err := s.db.Exec(`UPDATE slack_messages SET channel = ?, ts = ?, shown = ?, tries = 0, next_try = 0, last_error = '', lease = 0 WHERE id = ?`,
		channel, ts, shown, id)
	if err != nil {
		return fmt.Errorf("channel: store: %w", err)
	}
	return nil
}

func (s *sqliteStore) slackFailed(id string, tries int, next time.Time, lastErr, shown string) error {
	_, err := s.db.Exec(`INSERT INTO slack_messages (id, tries, next_try, last_error, shown) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT(id) DO UPDATE SET tries = excluded.tries, next_try = excluded.next_try,
		last_error = excluded.last_error, shown = excluded.shown, lease = 0`,
		id, tries, next.UnixMilli(), lastErr, shown)
	if err != nil {
		return fmt.Errorf("channel: store: %w", err)
	}
	return nil
}

func (s *sqliteStore) slackClaimShown(id, from, to string) (bool, error) {
	res, err := s.db.Exec(`UPDATE slack_messages SET shown = ? WHERE id = ? AND ts != '' AND shown = ?`, to, id, from)
	return oneRow(res, err)
}

func (s *sqliteStore) slackForget(id string) error {
	if _, err := s.db.Exec(`DELETE FROM slack_messages WHERE id = ?`, id); err != nil {
		return fmt.Errorf("channel: store: %w", err)
	}
	return nil
}

// oneRow reports whether a statement changed exactly one row.
func oneRow(res sql.Result, err error) (bool, error) {
	if err != nil {
		return false, fmt.Errorf("channel: store: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("channel: store: %w", err)
	}
	return n == 1, nil
}
