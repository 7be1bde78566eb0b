// Package metrics writes CloudWatch Embedded Metric Format (EMF) lines:
// one JSON object per event on stdout, which Lambda ships to CloudWatch
// Logs and CloudWatch turns into metrics, with no API call on the hot path.
//
// Dimensions must have few values (engine, status, error kind), never ids:
// every distinct combination is a billed metric.
package metrics

import (
	"encoding/json"
	"errors"
	"io"
	"sort"
	"sync"
	"time"
)

// Namespace of every metric of the runtime.
const Namespace = "Commonly/HostedRuntime"

// Units used by the runtime.
const (
	Count        = "Count"
	Milliseconds = "Milliseconds"
	None         = "None"
)

// Metric is one value.
type Metric struct {
	Name  string
	Unit  string
	Value float64
}

// Emitter writes EMF lines. The zero value and a nil *Emitter discard.
type Emitter struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
}

// Config configures an Emitter.
type Config struct {
	// Writer receives one line per event (stdout in Lambda); required.
	Writer io.Writer
	// Now stamps the events; nil means time.Now.
	Now func() time.Time
}

// New checks cfg and fills its defaults.
func New(cfg Config) (*Emitter, error) {
	if cfg.Writer == nil {
		return nil, errors.New("metrics: a writer is required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Emitter{w: cfg.Writer, now: cfg.Now}, nil
}

type directive struct {
	Namespace  string       `json:"Namespace"`
	Dimensions [][]string   `json:"Dimensions"`
	Metrics    []definition `json:"Metrics"`
}

type definition struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

// Emit writes one event with the given dimensions and metrics.
func (e *Emitter) Emit(dims map[string]string, ms ...Metric) {
	if e == nil || e.w == nil || len(ms) == 0 {
		return
	}
	doc := make(map[string]any, len(dims)+len(ms)+1)
	keys := make([]string, 0, len(dims))
	for k, v := range dims {
		doc[k] = v
		keys = append(keys, k)
	}
	defs := make([]definition, len(ms))
	for i, m := range ms {
		doc[m.Name] = m.Value
		defs[i] = definition{Name: m.Name, Unit: m.Unit}
	}
	sort.Strings(keys)
	doc["_aws"] = map[string]any{
		"Timestamp":         e.now().UnixMilli(),
		"CloudWatchMetrics": []directive{{Namespace: Namespace, Dimensions: [][]string{keys}, Metrics: defs}},
	}
	line, err := json.Marshal(doc)
	if err != nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, _ = e.w.Write(append(line, '\n'))
}
