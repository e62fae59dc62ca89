package approvals

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/mcpsafe/mcpsafe/channel"
)

// localStore is the store of one process: records in a map under one
// lock, written through to an SQLite file (file:PATH) when db is set, or
// kept in memory only.
type localStore struct {
	db *sqliteStore // nil: memory

	mu   sync.Mutex
	recs map[string]*record // each stored record is never changed in place
	sigs map[string]time.Time
	sess *memSessions
	flow *memFlows
	now  func() time.Time
}

func newLocalStore(db *sqliteStore) (*localStore, error) {
	l := &localStore{db: db, recs: map[string]*record{}, sigs: map[string]time.Time{}, sess: newMemSessions(), flow: newMemFlows(), now: time.Now}
	if db != nil {
		recs, err := db.load()
		if err != nil {
			db.close()
			return nil, err
		}
		for _, r := range recs {
			// No other process shares the file: a webhook caller's
			// hold ended with the process that had it.
			r.PollBy, r.PollUntil = "", time.Time{}
			l.recs[r.Req.ID] = r
		}
	}
	return l, nil
}

func (l *localStore) save(r *record) error {
	if l.db != nil {
		if err := l.db.save(r); err != nil {
			return storeErr(err)
		}
	}
	l.recs[r.Req.ID] = r
	return nil
}

func (l *localStore) admit(_ context.Context, id string, create func(time.Time, int) (*record, error), again func(record, time.Time) (*record, error)) (record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if cur, ok := l.recs[id]; ok {
		next, err := again(*cur, now)
		if err != nil || next == nil {
			return *cur, err
		}
		if err := l.save(next); err != nil {
			return *cur, err
		}
		return *next, nil
	}
	pending := 0
	for _, r := range l.recs {
		if r.Status == channel.StatusPending {
			pending++
		}
	}
	next, err := create(now, pending)
	if err != nil || next == nil {
		return record{}, err
	}
	if err := l.save(next); err != nil {
		return record{}, err
	}
	return *next, nil
}

func (l *localStore) update(_ context.Context, id string, fn func(record, time.Time) (*record, error)) (record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cur, ok := l.recs[id]
	if !ok {
		return record{}, errNotFound
	}
	next, err := fn(*cur, l.now())
	if err != nil || next == nil {
		return *cur, err
	}
	if err := l.save(next); err != nil {
		return *cur, err
	}
	return *next, nil
}

func (l *localStore) get(_ context.Context, id string) (record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.recs[id]
	if !ok {
		return record{}, errNotFound
	}
	return *r, nil
}

func (l *localStore) pending(_ context.Context, offset, limit int) ([]record, int, error) {
	l.mu.Lock()
	var ps []*record
	for _, r := range l.recs {
		if r.Status == channel.StatusPending {
			ps = append(ps, r)
		}
	}
	l.mu.Unlock()
	sort.Slice(ps, func(i, j int) bool {
		if !ps[i].Received.Equal(ps[j].Received) {
			return ps[i].Received.Before(ps[j].Received)
		}
		return ps[i].Req.ID < ps[j].Req.ID
	})
	total := len(ps)
	from := min(max(offset, 0), total)
	to := total
	if limit >= 0 {
		to = min(from+limit, total)
	}
	out := make([]record, 0, to-from)
	for _, r := range ps[from:to] {
		out = append(out, *r)
	}
	return out, total, nil
}

func (l *localStore) history(_ context.Context, limit int) ([]record, error) {
	l.mu.Lock()
	var ds []*record
	for _, r := range l.recs {
		if r.Status != channel.StatusPending {
			ds = append(ds, r)
		}
	}
	l.mu.Unlock()
	sort.Slice(ds, func(i, j int) bool {
		if !ds[i].DecidedAt.Equal(ds[j].DecidedAt) {
			return ds[i].DecidedAt.After(ds[j].DecidedAt)
		}
		return ds[i].Req.ID < ds[j].Req.ID
	})
	out := make([]record, 0, min(limit, len(ds)))
	for _, r := range ds[:min(limit, len(ds))] {
		out = append(out, *r)
	}
	return out, nil
}

func (l *localStore) all(context.Context) ([]record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]record, 0, len(l.recs))
	for _, r := range l.recs {
		out = append(out, *r)
	}
	return out, nil
}

func (l *localStore) expire(context.Context) ([]record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	var out []record
	for _, r := range l.recs {
		if r.Status != channel.StatusPending || now.Before(r.Deadline) {
			continue
		}
		next := *r
		next.Status, next.DecidedAt = channel.StatusExpired, now
		if err := l.save(&next); err != nil {
			// Stays pending in the store; it is still past its deadline,
			// so nothing can approve it, and the next tick tries again.
			continue
		}
		out = append(out, next)
	}
	return out, nil
}

func (l *localStore) prune(_ context.Context, retention time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for id, r := range l.recs {
		if r.Status == channel.StatusPending || r.polled(now) || now.Sub(r.DecidedAt) < retention {
			continue
		}
		if l.db != nil {
			if err := l.db.remove(id); err != nil {
				continue
			}
		}
		delete(l.recs, id)
	}
	return nil
}

func (l *localStore) countPending(context.Context) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.recs {
		if r.Status == channel.StatusPending {
			n++
		}
	}
	return n, nil
}

func (l *localStore) sawSignature(_ context.Context, sig string, until time.Time) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.db != nil {
		fresh, err := l.db.sawSignature(sig, until)
		return fresh, storeErr(err)
	}
	now := l.now()
	for k, t := range l.sigs {
		if now.After(t) {
			delete(l.sigs, k)
		}
	}
	if _, ok := l.sigs[sig]; ok {
		return false, nil
	}
	l.sigs[sig] = until
	return true, nil
}

func (l *localStore) sessions() sessionStore { return l.sess }
func (l *localStore) flows() flowStore       { return l.flow }
func (l *localStore) passkeys() passkeyStore { return nil }
func (l *localStore) shared() bool           { return false }
func (l *localStore) ping(context.Context) error {
	if l.db != nil {
		return storeErr(l.db.db.Ping())
	}
	return nil
}

func (l *localStore) close() error {
	if l.db != nil {
		return l.db.close()
	}
	return nil
}

// memSessions keeps login sessions in memory (the embedded stores: a
// restart logs everyone out).
type memSessions struct {
	mu sync.Mutex
	m  map[string]session
}

func newMemSessions() *memSessions { return &memSessions{m: map[string]session{}} }

func (m *memSessions) putSession(_ context.Context, key string, s session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	for k, v := range m.m {
		if now.After(v.expires) {
			delete(m.m, k)
		}
	}
	m.m[key] = s
	return nil
}

func (m *memSessions) getSession(_ context.Context, key string) (session, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.m[key]
	return s, ok, nil
}

func (m *memSessions) endSession(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, key)
	return nil
}
