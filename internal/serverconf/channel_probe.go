package serverconf

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/mcpsafe/mcpsafe/channel"
)

// probeTimeout bounds the start-up check of the approval channel.
const probeTimeout = 5 * time.Second

// checkChannel sends the approval service a signed probe before any call
// needs it. A channel that can never work (the service refuses the secret,
// the URL is not its webhook, the host is not served) is a start-up error
// that says what to change; a service that cannot be reached now is a
// warning, since it may start after this server. The probe is never an
// approval: only its status is read.
func checkChannel(ctx context.Context, w *channel.Webhook, log *slog.Logger) error {
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	err := w.Probe(pctx)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, channel.ErrMisconfigured):
		return err
	}
	if log == nil {
		log = slog.Default()
	}
	log.Warn("the approval channel cannot be reached now; calls that need an approver are refused until it can", "err", err)
	return nil
}
