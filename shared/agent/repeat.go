package agent

// repeatBreaker counts identical tool calls in a row, across steps. A
// model that calls the same tool with the same arguments again gets the
// same answer again; left alone it burns the turn's budget doing so.
type repeatBreaker struct {
	last  string
	count int
}

// see records a call and returns how many times in a row it has been made.
func (r *repeatBreaker) see(name, args string) int {
	key := name + "\x00" + normalizeArgs(args)
	if key == r.last {
		r.count++
	} else {
		r.last, r.count = key, 1
	}
	return r.count
}
