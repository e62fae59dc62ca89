// Package result holds the shapes of the structured results the gate
// answers a gated call with, besides the tool's own: the plan as the model
// sees it, a request for approval, a pending approval and a refusal.
package result

import "github.com/mcpsafe/mcpsafe/plan"

// PlanView is the plan as the model sees it in an approval_required result.
type PlanView struct {
	Summary string          `json:"summary"`
	Details []string        `json:"details"`
	Parts   []plan.PartView `json:"parts,omitempty"`
}

// Required is the structured content of a token-mode first call.
type Required struct {
	Status        string   `json:"status"` // always "approval_required"
	ApprovalToken string   `json:"approval_token"`
	ExpiresAt     string   `json:"expires_at"` // RFC 3339, exclusive
	Plan          PlanView `json:"plan"`
}

// Pending is the structured content of a channel call that is
// still waiting for a human. ApprovalToken is a sealed handle for this exact
// call, not an approval: calling again with it picks up the decision.
type Pending struct {
	Status        string   `json:"status"` // always "approval_pending"
	ApprovalToken string   `json:"approval_token"`
	ExpiresAt     string   `json:"expires_at"` // RFC 3339, exclusive
	RetryAfter    int      `json:"retry_after_seconds"`
	Plan          PlanView `json:"plan"`
}

// Refused is the structured content of a refused call.
type Refused struct {
	Status  string `json:"status"` // always "refused"
	Reason  string `json:"reason"`
	Message string `json:"message"`
}
