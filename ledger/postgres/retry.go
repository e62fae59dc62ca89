package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// retryLost runs step, and once more when its connection was lost on the
// way (the server terminated it, as pg_terminate_backend or a failover
// does, or the socket died): the pool hands the retry another connection,
// so one killed pooled connection no longer costs a refused call. Only
// steps that a retry cannot make approve twice use it: a read; a redemption
// (DELETE ... RETURNING returns the row to one statement only, so a retry
// after a lost reply finds nothing: a refusal, never a second approval);
// an issue (see Issue). The context still bounds both tries.
func retryLost(ctx context.Context, step func() error) error {
	err := step()
	if err == nil || !lostConnection(err) || ctx.Err() != nil {
		return err
	}
	return step()
}

// lostConnection reports whether err says the connection went away rather
// than that the statement failed.
func lostConnection(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "57P01", "57P02", "57P03": // admin_shutdown, crash_shutdown, cannot_connect_now
			return true
		}
		return false
	}
	var netErr net.Error
	return pgconn.SafeToRetry(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) ||
		errors.As(err, &netErr) && !netErr.Timeout()
}
