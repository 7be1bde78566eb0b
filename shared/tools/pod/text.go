package pod

// Bounds on what the model sends and what it is shown. Reads are capped
// so that a busy pod cannot flood the context; writes so that the model
// cannot flood the pod.
const (
	maxMessageRead   = 600
	maxContextRead   = 8000
	maxMemoryRead    = 8000
	maxMessageWrite  = 4000
	maxMemoryWrite   = 2000
	maxTitle         = 200
	maxAssignee      = 100
	maxNotes         = 4000
	maxAuthor        = 100
	defaultReadCount = 20
	maxReadCount     = 50
)
