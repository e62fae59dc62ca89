package serverconf

import (
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/channel"
)

// --approver-public-key makes the gate's webhook demand the service's
// signature: an approval without one (from anyone holding the HMAC secret)
// is refused; without the flag the same answer approves.
func TestApproverPublicKeyFlag(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("s", 64)), 0o600); err != nil {
		t.Fatal(err)
	}
	unsigned := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"approved":true,"approvers":["alice"]}`)
	}))
	defer unsigned.Close()
	pub, _, _ := ed25519.GenerateKey(nil)
	req := approver.Request{ID: "k-1", Tool: "t", Principal: "ci", Audience: "a", ExpiresAt: time.Now().Add(time.Minute)}
	for _, tc := range []struct {
		key, buildErr string
		refused       bool
	}{
		{"", "", false},
		{channel.EncodePublicKey(pub), "", true},
		{"not-a-key", "--approver-public-key", false},
	} {
		cfg := Config{Audience: "a"}
		fl := flag.NewFlagSet("test", flag.ContinueOnError)
		fl.SetOutput(io.Discard)
		cfg.RegisterFlags(fl)
		args := []string{"--approver-url", unsigned.URL, "--approver-secret-file", secret}
		if tc.key != "" {
			args = append(args, "--approver-public-key", tc.key)
		}
		if err := fl.Parse(args); err != nil {
			t.Fatal(err)
		}
		cfg.NoJournal, cfg.Mode = true, mcpsafe.ModeChannel
		g, err := Build(context.Background(), cfg)
		if tc.buildErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.buildErr) {
				t.Fatalf("key %q: Build = %v, want %q", tc.key, err, tc.buildErr)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		d, err := g.Options.Approver.Approve(context.Background(), req)
		g.Close()
		if tc.refused != errors.Is(err, channel.ErrAttestation) || tc.refused == d.Approved {
			t.Fatalf("key %q: %+v, %v; want refused=%v", tc.key, d, err, tc.refused)
		}
	}
}
