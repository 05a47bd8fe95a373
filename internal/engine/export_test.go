package engine

// ForgetDistinctSets drops the rows every DISTINCT's pages returned, as a
// restart or another gateway would: the next page of each rebuilds them.
func ForgetDistinctSets(e *Engine) { e.seen = newSeenSets(seenSetsMax) }
