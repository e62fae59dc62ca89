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
