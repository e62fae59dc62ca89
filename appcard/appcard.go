// Package appcard is the approval card of mcpsafe's MCP Apps path: a
// self-contained HTML view (no network, a strict Content-Security-Policy
// that runs only its own script) that a host renders in the conversation
// beside a gated call's result. It shows the plan whole as text (diffs and
// tables included), the time left, and Approve/Deny, and sends the
// decision through the host to the gate's app-only decision tool.
//
//	gate, err := mcpsafe.New(mcpsafe.Options{..., Card: appcard.New()})
//
// The gate serves the page at URI to clients that declared the MCP Apps
// extension; see the root package's approval_card.go for the path.
package appcard

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"strings"
)

// URI is the card's address as the gate serves it.
const URI = "ui://mcpsafe/approval-card"

var (
	//go:embed card.html
	pageHTML string
	//go:embed card.js
	pageJS string
	//go:embed card.css
	pageCSS string
)

// CSP is the card's Content-Security-Policy: nothing but its own inline
// script and style (by hash), no network, no images, no forms, no frames.
var CSP = "default-src 'none'; script-src '" + hash(pageJS) + "'; style-src '" + hash(pageCSS) +
	"'; img-src 'none'; connect-src 'none'; form-action 'none'; base-uri 'none'; frame-src 'none'"

var page = strings.NewReplacer("{{CSP}}", CSP, "{{CSS}}", pageCSS, "{{JS}}", pageJS).Replace(pageHTML)

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// A Card is the approval card (an approver.Card).
type Card struct{}

// New returns the card, for mcpsafe.Options.Card.
func New() Card { return Card{} }

// Resource returns the card's ui:// address and its HTML.
func (Card) Resource() (uri, html string) { return URI, page }
