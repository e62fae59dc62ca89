// Package journal is mcpsafe's audit journal: an append-only, hash-chained
// file in which every gated call leaves its approval before it runs and its
// outcome after, so that "we approved a bad plan" can be replayed.
//
// # Format
//
// One JSON object (a Record) per line, each line ending in "\n". Lines are
// never rewritten. Each record carries:
//
//   - seq: 1 for the first line, then +1 per line with no gap;
//   - prev: the lowercase hex SHA-256 of the previous line's exact bytes
//     without its newline; for the first line, Genesis, the SHA-256 of the
//     empty string (as if an empty line came before);
//   - time (UTC, stamped by the writer), tool, principal, session, call (the
//     id linking an approval to its outcome), args_digest, args (a redacted
//     copy, see Redact: every key the tool got, sensitive values hidden),
//     summary (the plan the approver saw), decision, by (who or what
//     decided) and reason/error.
//
// # Decision words
//
// They name what the server observed and nothing more:
//
//   - client-accepted: the client answered an elicitation with accept. The
//     server cannot tell a person from a script answering for one, so it
//     does not say "user approved".
//   - token-redeemed: an approval token was presented and redeemed once.
//   - channel-approved: an approval channel returned yes; by holds the
//     approver identity the channel reported.
//   - policy-auto-approved: a policy rule approved without a person; by
//     holds the rule name.
//   - declined, cancelled, timeout: a "no", a dismissal and no answer are
//     kept apart; refused: the gate refused (reason holds the reason code).
//   - executed / failed: written after execute; failed carries the error.
//     "executed" means the tool returned without error, not that its effect
//     was what the plan described.
//   - ambiguous: written by Open for an approval with no outcome record:
//     the previous process stopped between the approval and the outcome.
//     The call was not retried and may or may not have run; a person must
//     check. Open writes it exactly once per call.
//   - journal-recovered: Open cut a torn final line (see below); the reason
//     gives its length and SHA-256. Also written when writing resumes after
//     failed writes (a full disk): the reason says since when, the first
//     error, and how many records were refused meanwhile.
//
// # Writing
//
// Append returns only after the record is written and fsync'd; the gate
// writes the approval record before execute and runs nothing if that fails.
// Concurrent Appends are committed together (group commit): one writer
// goroutine takes every record queued while the previous fsync ran and
// writes them with one write and one fsync. Open takes an exclusive flock so
// two processes cannot fork the chain. An outcome record (executed,
// failed) is written at once and fsync'd with the next commit, at most
// DeferredSyncDelay (1 s) later (see WithSyncOutcome): one fsync per
// call, whether calls come back to back or a client's calls come 100 ms
// apart.
//
// # Failed writes and full disks
//
// If a write or fsync fails (ENOSPC, EFBIG, EIO), every caller in that batch
// gets an error naming the cause (so the gate runs none of their calls), and
// the writer cuts the file back to the end of the last durable record and
// syncs it: a full disk that took part of a batch leaves no partial line,
// and after a failed fsync nothing of the batch is trusted. Later Appends
// keep trying, without a restart: each first repairs the file again (cut,
// fsync, and a check that the last line is still the head of the chain,
// else the journal stays shut and says why), then writes a
// journal-recovered record and the outcome records (executed, failed) that
// could not be written when their calls ended, each with a reason saying it
// is late, ahead of the new records. Approval records that failed are never
// written later: their calls did not run. At most 1024 held-back outcomes
// are kept; Close makes one last try to write them; beyond that, or if the
// process stops while the disk is still full, their approvals become
// ambiguous on the next Open.
//
// # Size limits
//
// A string argument over LongValueBytes (1 KiB: a written file's content,
// a document) is kept as {"sha256": "…", "bytes": N} of its UTF-8 bytes,
// so that the journal is not a copy of every file a tool wrote;
// WithKeepLongValues(true) keeps such values whole. Secret-named arguments
// are redacted either way, never digested.
//
// Anyone who can reach the server can cause refusals, so what they add is
// bounded. A refused, declined, cancelled or timed-out record keeps at most
// MaxRefusalArgsBytes (4 KiB) of redacted arguments and 1 KiB of plan
// summary; longer arguments are replaced by a note with their size and
// args_digest (or, without one, the SHA-256 of the redacted copy) standing
// for them. Approvals and outcomes keep up to MaxArgsBytes (64 KiB) and
// 16 KiB of summary; error and reason texts are clipped at 8 KiB, so that
// no approval is unrecordable for the size of its plan. Once
// the file reaches its size limit (WithMaxBytes, default DefaultMaxBytes,
// 1 GiB), refusal-class records are no longer written: the first one is
// replaced by a single note saying so, and Append returns ErrRefusalsCapped.
// Approvals and outcomes are still written, because a journal that cannot
// take an approval runs nothing. With WithRotation the limit applies to the
// active file.
//
// # Rotation
//
// With WithRotation the active file is sealed by size or age: renamed to
// PATH.FIRST-LAST (SegmentPath), the directory fsynced, and a new file
// started at PATH. The files form one chain: seq continues and the first
// record of a new file links to the last record of the segment before it.
// With checkpoints the head is signed before each seal. VerifyFile,
// VerifySignedSet, ShowFile and Export read the whole set (SetFiles) and
// name the file an error is in; Open reads its tail (see Opening); a set
// whose oldest segments were deleted is accepted by Open but by the
// readers only with AllowPruned (and, with a key, only if a checkpoint
// vouches for what remains).
//
// # Opening
//
// Open does not read the whole journal: its time and memory do not grow
// with the records already written. The head file (HeadSuffix) names the
// last durable line and the oldest approval still waiting for its outcome
// (Head.Open); Open reads from there, or from the head, or from the latest
// signed checkpoint if that is older, to the end of the set, and verifies
// that stretch as Verify does: the chain, the head's hash at its seq, a
// torn final line (cut and recorded), the checkpoints that fall in it, and
// every approval without an outcome (marked ambiguous). Of the files before
// it Open checks only that they join up: each file's first line continues
// the chain from the last line of the one before it, and each segment
// begins and ends at the seqs its name says. Anything unexpected there, or
// a head file without the hint (written before it existed), and Open reads
// the whole set as it used to and judges it the same way. An edit to a
// record before that stretch which leaves the chain after it as it was (a
// line changed in place) is therefore not seen by Open: `journal verify`
// (VerifyFile, VerifySignedSet), which reads everything, reports it. Run
// it on a schedule, and before trusting a journal in an audit.
//
// # What Verify proves, and what it does not
//
// Verify proves the file is one unbroken chain from Genesis: no line inside
// it was edited, removed, inserted, duplicated or reordered since it was
// written, and it names the first bad line. It tells a crash from tampering:
// an incomplete final line (no newline, or not JSON) is a *TornError, which
// Open repairs by cutting it and recording the cut; anything else is a
// *TamperError, and Open refuses the file rather than paper over it (in
// the part it reads: see Opening). Cutting
// a torn line loses nothing an attacker could not already do: removing
// whole lines from the end is invisible to the chain.
//
// The end of the chain is checked against the head file (HeadSuffix): an
// edit to the very last line, or lines removed from the end, would
// otherwise only be visible as a different last hash. VerifyFile, ShowFile
// and Open report both as a *TamperError.
//
// It does not prove that the file is the one the server wrote. Anyone who
// can rewrite the journal and its head file can drop its tail or rebuild a
// valid chain over invented records. Against that, anchor Summary.LastHash
// (and LastSeq) somewhere the writer's host cannot change: a ticket, a
// remote log, a signed timestamp. A later verify whose chain passes through
// the anchored hash at the anchored seq proves everything up to it. The
// journal should also sit outside every directory an agent can reach (see
// DefaultPath).
//
// After a crash the fsync'd records are intact, but records written in the
// same batch as a torn line may be complete though never acknowledged; an
// approval among them then becomes ambiguous, which errs on the side of a
// person checking.
// A filesystem that exposes zeroed blocks inside the unsynced region after
// a power loss can make a crash look like a damaged middle line; Open then
// refuses, and a person decides (fail closed rather than guess).
package journal
