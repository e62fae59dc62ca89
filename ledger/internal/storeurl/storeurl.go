// Package storeurl reads the ledger's own parameters out of a store URL
// (ledger_timeout, ledger_sweep, ledger_prefix, ledger_table) for the
// backends in ledger/sqlite, ledger/redis and ledger/postgres, so that what
// remains can go to the store's driver.
package storeurl

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/mcpsafe/mcpsafe/ledger"
)

// Options are the ledger's own URL query parameters.
type Options struct {
	Timeout time.Duration // ledger_timeout, default ledger.DefaultTimeout
	Sweep   time.Duration // ledger_sweep, default ledger.DefaultSweepInterval
	Prefix  string        // ledger_prefix (redis)
	Table   string        // ledger_table (postgres)
}

// Defaults are the Options of a URL without ledger_* parameters.
func Defaults() Options {
	return Options{Timeout: ledger.DefaultTimeout, Sweep: ledger.DefaultSweepInterval}
}

// Split parses a store URL and takes the ledger_* options out of its
// query, so that what remains can go to the store's own driver.
func Split(raw, kind string) (*url.URL, Options, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, Options{}, fmt.Errorf("ledger: %s URL: %w", kind, err)
	}
	q, err := ParseQuery(u.RawQuery)
	if err != nil {
		return nil, Options{}, err
	}
	o, err := TakeOptions(q)
	if err != nil {
		return nil, Options{}, err
	}
	u.RawQuery = q.Encode()
	return u, o, nil
}

// ParseQuery is strict where url.URL.Query is not: Query silently drops a
// malformed pair (such as one containing ';'), which would turn a bad
// ledger_table into the default table.
func ParseQuery(raw string) (url.Values, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return nil, fmt.Errorf("ledger: URL query: %w", err)
	}
	return q, nil
}

// TakeOptions removes the ledger_* parameters from q and parses them. Any
// other ledger_* key is an error: a typo must not silently select defaults.
func TakeOptions(q url.Values) (Options, error) {
	o := Defaults()
	for k, vs := range q {
		if !strings.HasPrefix(k, "ledger_") {
			continue
		}
		if len(vs) != 1 {
			return o, fmt.Errorf("ledger: parameter %s given %d times", k, len(vs))
		}
		v := vs[0]
		switch k {
		case "ledger_timeout", "ledger_sweep":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return o, fmt.Errorf("ledger: %s=%q: want a positive duration such as 2s", k, v)
			}
			if k == "ledger_timeout" {
				o.Timeout = d
			} else {
				o.Sweep = d
			}
		case "ledger_prefix":
			o.Prefix = v
		case "ledger_table":
			o.Table = v
		default:
			return o, fmt.Errorf("ledger: unknown parameter %s", k)
		}
		delete(q, k)
	}
	return o, nil
}

// Redact hides a password before a URL goes into an error message.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
