package epochs

// End is what is known when the epoch being produced ends: whether the
// group took a partition from the instance since its generation began
// (the partition may be another's now), whether every record reached the
// broker, and what the transaction's end answered.
type End struct {
	// Rebalanced says a rebalance revoked a partition of the instance,
	// or the instance lost them, since the epoch's generation began: such
	// an epoch never commits, as the partition may be another instance's
	// now, which starts from the offsets committed before. A rebalance
	// that only gave the instance more takes nothing from it, and is not
	// counted (decision 0049).
	Rebalanced bool
	// ProduceFailed says a record of the epoch did not reach the broker;
	// ProduceFatal that the failure would recur on every replay (a record
	// too large for its topic).
	ProduceFailed, ProduceFatal bool
}

// Try is how the epoch's transaction is to end: a commit, unless a
// partition was revoked or a record failed.
func (e End) Try() (commit bool) { return !e.Rebalanced && !e.ProduceFailed }

// Outcome is how an epoch ended, as the runtime acts on it.
type Outcome uint8

const (
	// Committed: the epoch's records and offsets are in; the book moves
	// on (Book.Committed).
	Committed Outcome = iota
	// Aborted: nothing of the epoch is in; the generation resets every
	// task from what is committed and reprocesses it.
	Aborted
	// Unknown: the end's outcome is not known; no transaction may follow
	// on the same client (its records could join the open one): the
	// client is replaced, whose fencing settles the old transaction, and
	// the generation resets.
	Unknown
	// Fatal: replaying the epoch would fail the same way; the engine
	// stops.
	Fatal
)

func (o Outcome) String() string {
	return [...]string{"committed", "aborted", "unknown", "fatal"}[o]
}

// Ended is what the transaction's end answered.
type Ended struct {
	// Committed is the client's answer: the transaction committed (false:
	// it aborted).
	Committed bool
	// Failed says the end itself failed; FailedFatal that the failure is
	// one no replay cures (fenced by another producer, unauthorized).
	Failed, FailedFatal bool
	// AbortedUnstored says the broker aborted the transaction without
	// storing the epoch's records (errAbortedUnstored in the runtime).
	AbortedUnstored bool
	// StillOpen says the broker reports the transaction still open after
	// the client's abort: it may have answered "retry as abort" without
	// a request, and the next epoch's records would join the open one.
	StillOpen bool
}

// Decide is how the epoch ended, and why, from what was known at its end
// and what the end answered. The order of the rules matters: an end that
// failed says nothing of the records, a fatal produce error is fatal
// whatever the end did, and a rebalance turns even a commit the client
// reports into an abort the runtime must act on (the client ended it as
// one: Try).
func Decide(e End, got Ended) (Outcome, string) {
	switch {
	case got.AbortedUnstored:
		return Aborted, "the broker aborted the transaction without its records"
	case got.Failed && got.FailedFatal:
		return Fatal, "the transaction's end failed, and would again"
	case got.Failed:
		return Unknown, "the transaction's end failed"
	case !got.Committed && got.StillOpen:
		return Unknown, "after the abort the broker reports the transaction still open"
	case e.ProduceFailed && e.ProduceFatal:
		return Fatal, "a record of the epoch cannot be written, on any replay"
	case e.ProduceFailed:
		return Aborted, "a record of the epoch did not reach the broker"
	case e.Rebalanced:
		return Aborted, "the group revoked a partition"
	case !got.Committed:
		return Aborted, "the group rebalanced or the broker refused the commit"
	}
	return Committed, ""
}
