package appcard

import (
	"regexp"
	"strings"
	"testing"
)

// The card's page runs only its own script, loads nothing, and builds the
// plan from text: its policy allows exactly the embedded script and style
// by hash, and the script has no way to turn a string into markup or code.
func TestCardPageIsStrict(t *testing.T) {
	uri, html := New().Resource()
	if uri != URI || !strings.HasPrefix(uri, "ui://") {
		t.Fatalf("uri %q", uri)
	}
	for _, want := range []string{
		`<meta http-equiv="Content-Security-Policy" content="` + CSP + `">`,
		"default-src 'none'", "connect-src 'none'", "img-src 'none'", "frame-src 'none'", "form-action 'none'",
		"script-src '" + hash(pageJS) + "'", "style-src '" + hash(pageCSS) + "'",
		"<script>" + pageJS + "</script>", "<style>" + pageCSS + "</style>",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(CSP, "unsafe") || strings.Contains(CSP, "http") || strings.Contains(CSP, "*") {
		t.Errorf("the policy allows more than the page's own code: %s", CSP)
	}
	if n := strings.Count(html, "<script"); n != 1 {
		t.Errorf("%d scripts, want the one embedded", n)
	}
	// Markup or code from strings: none of these may appear in the script.
	bad := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setTimeout\("|srcdoc|\.src\s*=|href`)
	if m := bad.FindAllString(pageJS, -1); len(m) > 0 {
		t.Errorf("the card's script can turn strings into markup or code: %v", m)
	}
	if !strings.Contains(pageJS, "textContent") {
		t.Error("the card's script sets no text")
	}
}
