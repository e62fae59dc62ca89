package approvals

import (
	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/journal"
)

// callOutcomes reads the gates' journals (ServiceOptions.Journals, the
// overview's reader) and says, for each decided request in items, what
// became of its call: a gate journals the outcome under the request's id
// (record.call). Without journals nothing is said; an approved call with
// no outcome yet says so.
func (s *Service) callOutcomes(items []item) {
	if len(s.opts.Journals) == 0 {
		for i := range items {
			if n := items[i].WithdrawnNote(); n != "" && items[i].Status == channel.StatusApproved {
				items[i].Outcome = "approved, not run: " + n + " (the gate said so)"
				continue
			}
			if items[i].Status == channel.StatusApproved {
				items[i].Outcome = "whether it ran is not known here (approvals serve --journal PATH, the gate's journal, shows it)"
			}
		}
		return
	}
	want := make(map[string]bool, len(items))
	for _, it := range items {
		want[it.ID] = true
	}
	last := map[string]journal.Record{}
	s.readJournals(func(_ int, rec *journal.Record) {
		if rec.Call != "" && want[rec.Call] && kindOf(rec) != "" && kindOf(rec) != kindGrantUsed {
			last[rec.Call] = *rec
		}
	})
	for i := range items {
		rec, ok := last[items[i].ID]
		switch {
		case ok:
			items[i].Outcome = outcomeWords(&rec)
		case items[i].Status == channel.StatusApproved && items[i].WithdrawnNote() != "":
			items[i].Outcome = "approved, not run: " + items[i].WithdrawnNote() + " (the gate said so)"
		case items[i].Status == channel.StatusApproved:
			items[i].Outcome = "not run yet: the gate's journal has no outcome for this call"
		}
	}
}

// outcomeWords is a journal outcome in words, with its time.
func outcomeWords(rec *journal.Record) string {
	at := " at " + rec.Time.UTC().Format("2006-01-02 15:04:05 UTC")
	switch kindOf(rec) {
	case kindExecuted:
		return "The call ran" + at
	case kindFailed:
		return "The call ran and failed" + at
	case kindAmbiguous:
		return "The call may have run (cut short)" + at
	case kindRefused:
		why := rec.Decision
		if rec.Reason != "" {
			why = rec.Reason
		}
		return "The call did not run (" + why + ")" + at
	}
	return ""
}
