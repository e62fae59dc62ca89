package approvals

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver for the file store
)

// sqliteStore is the file store's persistence under localStore: every
// change is written here before it takes effect.
type sqliteStore struct {
	db *sql.DB
}

func openSQLite(path string) (*sqliteStore, error) {
	if strings.ContainsAny(path, "?#\x00") {
		return nil, fmt.Errorf("channel: store path %q contains '?', '#' or NUL", path)
	}
	// The store holds plans and approvers' names: private to this user.
	// It is created 0600 here (SQLite gives its -wal and -shm files the
	// main file's mode), and an existing file is tightened to 0600.
	// A fresh machine has no state directory yet (SQLite would fail with
	// "unable to open database file"): create it private too.
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("channel: store %s: %w", path, err)
	}
	if err := privateFile(path); err != nil {
		return nil, fmt.Errorf("channel: store %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, fmt.Errorf("channel: store %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS requests (id TEXT PRIMARY KEY, data TEXT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS signatures (sig TEXT PRIMARY KEY, until INTEGER NOT NULL)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			db.Close()
			return nil, fmt.Errorf("channel: store %s: %w", path, err)
		}
	}
	return &sqliteStore{db: db}, nil
}

func (s *sqliteStore) save(r *record) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = s.db.Exec(`INSERT INTO requests (id, data) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET data = excluded.data`, r.Req.ID, string(data))
	if err != nil {
		return fmt.Errorf("channel: store: %w", err)
	}
	return nil
}

func (s *sqliteStore) load() ([]*record, error) {
	rows, err := s.db.Query(`SELECT data FROM requests`)
	if err != nil {
		return nil, fmt.Errorf("channel: store: %w", err)
	}
	defer rows.Close()
	var out []*record
	for rows.Next() {
		var data string
		if err := rows.Scan(&data); err != nil {
			return nil, fmt.Errorf("channel: store: %w", err)
		}
		r := new(record)
		if err := json.Unmarshal([]byte(data), r); err != nil {
			return nil, fmt.Errorf("channel: store: corrupt record: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func (s *sqliteStore) sawSignature(sig string, until time.Time) (bool, error) {
	if _, err := s.db.Exec(`DELETE FROM signatures WHERE until < ?`, time.Now().Unix()); err != nil {
		return false, fmt.Errorf("channel: store: %w", err)
	}
	res, err := s.db.Exec(`INSERT INTO signatures (sig, until) VALUES (?, ?) ON CONFLICT(sig) DO NOTHING`, sig, until.Unix())
	if err != nil {
		return false, fmt.Errorf("channel: store: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("channel: store: %w", err)
	}
	return n == 1, nil
}

func (s *sqliteStore) remove(id string) error {
	if _, err := s.db.Exec(`DELETE FROM requests WHERE id = ?`, id); err != nil {
		return fmt.Errorf("channel: store: %w", err)
	}
	return nil
}

func (s *sqliteStore) close() error { return s.db.Close() }

// privateFile creates path with mode 0600, or makes an existing file (and
// its SQLite companions) 0600.
func privateFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Chmod(0o600); err != nil {
		return err
	}
	for _, side := range []string{path + "-wal", path + "-shm"} {
		if err := os.Chmod(side, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}
