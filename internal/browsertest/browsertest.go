// Package browsertest starts a real headless Chromium for the tests of
// every page a person sees, and keeps their screenshots.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"
)

// Chromium finds Debian's chromium ($MCPSAFE_CHROMIUM overrides). Missing
// it is a failure under CI=true and a loud skip elsewhere (scripts/chromium
// installs it).
func Chromium(t testing.TB) string {
	t.Helper()
	p := os.Getenv("MCPSAFE_CHROMIUM")
	if p == "" {
		p, _ = exec.LookPath("chromium")
	}
	if p == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium not found and CI=true: the browser test must run in CI (scripts/chromium installs it)")
		}
		t.Skip("SKIPPING the real-browser test: chromium not found; run scripts/chromium to install it")
	}
	return p
}

// New starts a fresh headless Chromium with its own profile, width x
// height, and returns a context for chromedp steps (90 seconds at most).
func New(t testing.TB, width, height int) context.Context {
	t.Helper()
	path := Chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox, // tests run as root, where chromium's sandbox cannot start
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelCtx := chromedp.NewContext(actx)
	// The first Do starts the browser and binds its life to bctx, which
	// must carry no timeout; the steps run under a derived deadline.
	if err := chromedp.Do(bctx); err != nil {
		cancelCtx()
		cancelAlloc()
		t.Fatalf("starting %s: %v", path, err)
	}
	ctx, cancelTimeout := context.WithTimeout(bctx, 90*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	return ctx
}

// Artifact writes a screenshot to testdata/artifacts/name (beside the
// test) and logs its path.
func Artifact(t testing.TB, name string, png []byte) {
	t.Helper()
	dir := filepath.Join("testdata", "artifacts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
}

// VirtualAuthenticator adds a DevTools virtual authenticator to the
// browser of ctx (CTAP2, internal, resident keys, user verification on,
// presence simulated): passkeys work on http://localhost pages without a
// person or a device.
func VirtualAuthenticator(t testing.TB, ctx context.Context) webauthn.AuthenticatorID {
	t.Helper()
	if _, err := chromedp.Call(ctx, webauthn.Enable, webauthn.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	res, err := chromedp.Call(ctx, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{Options: &webauthn.VirtualAuthenticatorOptions{
		Protocol: webauthn.AuthenticatorProtocolCtap2, Transport: webauthn.AuthenticatorTransportInternal,
		HasResidentKey: true, HasUserVerification: true, IsUserVerified: true, AutomaticPresenceSimulation: true,
	}})
	if err != nil {
		t.Fatal(err)
	}
	return res.AuthenticatorID
}

// UserVerified makes the authenticator's user verification succeed or fail.
func UserVerified(t testing.TB, ctx context.Context, id webauthn.AuthenticatorID, ok bool) {
	t.Helper()
	if _, err := chromedp.Call(ctx, webauthn.SetUserVerified, webauthn.SetUserVerifiedParams{AuthenticatorID: id, IsUserVerified: ok}); err != nil {
		t.Fatal(err)
	}
}
