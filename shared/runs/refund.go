package runs

// RefundDue is the refund rule, written once for every engine, failure
// kind and writer (the worker, the service, the reaper): a turn that
// failed for an infrastructure reason — ours or a provider's, not the
// user's input, the model's answer or a bound — is given back to the
// user's daily ceiling only if no model output was produced, that is, no
// model call answered. A failure after the model answered is paid for
// and counts, whatever failed later (a lost sandbox, a failed post), so
// that no turn that reached the model can be made free of the ceiling.
func (r *Run) RefundDue(infrastructure bool) bool {
	return infrastructure && !r.ModelAnswered()
}

// ModelAnswered reports whether any model call of the run returned an
// answer. Estimated steps (calls whose answer never arrived) do not count.
func (r *Run) ModelAnswered() bool {
	for _, s := range r.Steps {
		if !s.Estimated {
			return true
		}
	}
	return false
}
