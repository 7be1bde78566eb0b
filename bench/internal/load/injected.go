package load

import (
	"sync"
	"time"
)

// injected counts the faults injected, by name.
type injected struct {
	mu     sync.Mutex
	counts map[string]int
}

func newInjected() *injected { return &injected{counts: map[string]int{}} }

func (i *injected) turn(f Fault) { i.add(string(f), 1) }

func (i *injected) add(name string, n int) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.counts[name] += n
}

func (i *injected) get(name string) int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.counts[name]
}

// observer feeds the accounting from the counted DynamoDB client, and
// the admission latency from the admission's transaction: from the API
// receiving the request (requestStart, set by the gateway's wrapper) to
// the transaction that counted the turn and created its run.
type observer struct {
	mu         sync.Mutex
	usage      *usage
	admissions []time.Duration
	runsTable  string
}
