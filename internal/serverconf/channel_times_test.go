package serverconf

import (
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
)

// --approver-timeout and --ttl must not silently cap each other: a channel
// request expires with its approval after --ttl, so a longer wait is
// refused at startup with both values and the fix in the message; a wait
// left unset follows --ttl.
func TestChannelTimesFromFlags(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("s", 64)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args          []string
		want          string        // "" = accepted
		timeout, wait time.Duration // the gate's ChannelTimeout and ChannelWait when accepted
	}{
		{nil, "", 5 * time.Minute, 0},
		{[]string{"--ttl", "2m"}, "", 2 * time.Minute, 0},
		{[]string{"--ttl", "15m", "--approver-timeout", "10m"}, "", 10 * time.Minute, 0},
		{[]string{"--approver-timeout", "10m"}, "--approver-timeout 10m0s is longer than --ttl 5m0s", 0, 0},
		{[]string{"--ttl", "1m", "--approver-timeout", "90s"}, "raise --ttl to at least 1m30s", 0, 0},
		{[]string{"--ttl", "2m", "--channel-wait", "3m"}, "--channel-wait 3m0s is longer", 0, 0},
		{[]string{"--channel-wait", "20s", "--progress-interval", "2s"}, "", 5 * time.Minute, 20 * time.Second},
		{[]string{"--approver-timeout", "-1s"}, "must be positive", 0, 0}, // refused by the flag itself
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cfg := Config{Audience: "a"}
			fl := flag.NewFlagSet("test", flag.ContinueOnError)
			fl.SetOutput(io.Discard)
			cfg.RegisterFlags(fl)
			args := append([]string{"--approver-url", "https://approve.example/hook", "--approver-secret-file", secret}, tc.args...)
			if err := fl.Parse(args); err != nil {
				if tc.want != "" && strings.Contains(err.Error(), tc.want) {
					return
				}
				t.Fatal(err)
			}
			cfg.NoJournal, cfg.Mode = true, mcpsafe.ModeChannel
			g, err := Build(context.Background(), cfg)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Build = %v, want an error containing %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			if g.Options.ChannelTimeout != tc.timeout || g.Options.ChannelWait != tc.wait {
				t.Fatalf("ChannelTimeout %s, ChannelWait %s; want %s, %s", g.Options.ChannelTimeout, g.Options.ChannelWait, tc.timeout, tc.wait)
			}
			if _, err := mcpsafe.New(g.Options); err != nil {
				t.Fatalf("the options do not make a gate: %v", err)
			}
		})
	}
}
