package tools

// Metered is a tool whose calls are priced (web search per query, the
// code sandbox per second of its life). Under a spend cap the loop bounds
// a turn by its reservation: it counts what every metered tool may still
// add (Outstanding) before each model call, and refuses a call whose
// NextCall would not fit.
type Metered interface {
	Tool
	// Outstanding is the priced usage the tool may still add to the
	// turn without another call: a live sandbox's life not yet priced,
	// billed when it is killed.
	Outstanding() Usage
	// NextCall is the most priced usage one more call may add beyond
	// Outstanding.
	NextCall() Usage
}
