package approvals

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpsafe/mcpsafe/ledger/ledgertest"
)

// pgTestDB creates a database of its own for the test on the test
// PostgreSQL server (scripts/services), drops it when the test ends, and
// returns its URL.
func pgTestDB(tb testing.TB) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, ledgertest.PostgresURL())
	if err != nil {
		ledgertest.Missing(tb, "PostgreSQL at "+ledgertest.PostgresURL(), err)
	}
	name := "approvals_test_" + ledgertest.RandHex(6)
	if _, err := admin.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()); err != nil {
		admin.Close(ctx)
		tb.Fatalf("create database: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.Exec(ctx, `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`); err != nil {
			tb.Errorf("drop database %s: %v", name, err)
		}
		admin.Close(ctx)
	})
	u, err := url.Parse(ledgertest.PostgresURL())
	if err != nil {
		tb.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// pgExec runs sql on the database at dbURL on a connection of its own.
func pgExec(tb testing.TB, dbURL, sql string, args ...any) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, sql, args...); err != nil {
		tb.Fatalf("%s: %v", sql, err)
	}
}
