package durableobject_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/agent"
	"github.com/commonly/runtime/shared/engine/durableobject"
	"github.com/commonly/runtime/shared/engine/durableobject/dotest"
	"github.com/commonly/runtime/shared/runs"
)

// deadlines records the deadline of every request the engine sends.
type deadlines struct {
	next http.RoundTripper
	got  []time.Duration
}

func (d *deadlines) RoundTrip(r *http.Request) (*http.Response, error) {
	if dl, ok := r.Context().Deadline(); ok {
		d.got = append(d.got, time.Until(dl))
	}
	return d.next.RoundTrip(r)
}

// Issue 9, item 14: the engine waits as long as a native turn may run
// (the loop's wall clock and the time to post its answer), not 10 s,
// which most real turns outlast while the Durable Object goes on.
func TestWaitsAsLongAsANativeTurn(t *testing.T) {
	if want := agent.DefaultMaxWall + agent.DefaultPostGrace; durableobject.DefaultTimeout != want {
		t.Fatalf("DefaultTimeout = %s, want %s", durableobject.DefaultTimeout, want)
	}
	rec := &deadlines{next: http.DefaultTransport}
	r := newRig(t, func(c *durableobject.Config) { c.HTTPClient = &http.Client{Transport: rec} })
	if run, _ := r.run(context.Background()); run.Status != runs.StatusSucceeded {
		t.Fatalf("run %s %q", run.Status, run.ErrorMessage)
	}
	if len(rec.got) != 1 || rec.got[0] < durableobject.DefaultTimeout-5*time.Second || rec.got[0] > durableobject.DefaultTimeout {
		t.Fatalf("request deadlines %v, want about %s", rec.got, durableobject.DefaultTimeout)
	}
}

// DO_RUNTIME_TIMEOUT is read as a duration, and must leave the worker
// its final write within the turn function's time (MaxTimeout).
func TestParseTimeout(t *testing.T) {
	for in, want := range map[string]time.Duration{"": durableobject.DefaultTimeout, "60s": time.Minute, "90": 90 * time.Second, "175s": durableobject.MaxTimeout} {
		if got, err := durableobject.ParseTimeout(in); err != nil || got != want {
			t.Errorf("ParseTimeout(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"0", "-1s", "soon", "176s", "10m"} {
		if _, err := durableobject.ParseTimeout(in); err == nil || !strings.Contains(err.Error(), "DO_RUNTIME_TIMEOUT") {
			t.Errorf("ParseTimeout(%q) = %v, want an error naming DO_RUNTIME_TIMEOUT", in, err)
		}
	}
	if _, err := durableobject.New(durableobject.Config{BaseURL: "https://do.example", Token: "t", Prices: fakePrices{"m"}, DefaultModel: "m",
		Timeout: durableobject.MaxTimeout + time.Second}); err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Errorf("New with a timeout past MaxTimeout: %v", err)
	}
}

// A turn the runtime did not answer in time, or answered 2xx with a body
// we cannot read, has an unknown outcome: the Durable Object may have
// gone on, posted and spent. The run fails without a refund, and its cost
// is an estimated step, not zero.
func TestUnknownOutcomeIsEstimatedAndNotRefunded(t *testing.T) {
	cases := []struct {
		name   string
		answer func(w http.ResponseWriter, r *http.Request)
		kind   runs.ErrorKind
		msg    string
	}{
		{"no answer in time", func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
			runs.ErrTimeout, "the durable object runtime did not answer within 50ms; the turn may have run"},
		{"a 2xx that cannot be read", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"finalMessage":`)) },
			runs.ErrFallback, "the durable object runtime answered with a response that could not be read; the turn may have run"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, func(cfg *durableobject.Config) { cfg.Timeout = 50 * time.Millisecond })
			r.rt.Raw(c.answer)
			run, res := r.run(context.Background())
			if run.Status != runs.StatusFailed || run.ErrorKind != c.kind || run.ErrorMessage != c.msg || res.Infrastructure {
				t.Fatalf("run %s %s %q infrastructure %v", run.Status, run.ErrorKind, run.ErrorMessage, res.Infrastructure)
			}
			if len(run.Steps) != 1 || !run.Steps[0].Estimated || run.Steps[0].PromptTokens <= 0 ||
				run.Steps[0].CompletionTokens != agent.DefaultMaxOutputTokens || run.CostMicros <= 0 ||
				run.CostMicros != run.Steps[0].CostMicros || run.Cost.PriceVersion == "" {
				t.Fatalf("steps %+v cost %d %+v: the unknown outcome must be estimated", run.Steps, run.CostMicros, run.Cost)
			}
			if run.RefundDue(res.Infrastructure) {
				t.Error("an unknown outcome is refunded")
			}
		})
	}
}

// A 2xx without usage breaks the wire's contract: the cost is estimated
// from the message sizes and marked so, and the breach is logged.
func TestAnswerWithoutUsageIsEstimated(t *testing.T) {
	r := newRig(t, nil)
	answer := strings.Repeat("an answer ", 100)     // 1,000 bytes
	r.rt.Answer(dotest.Reply{FinalMessage: answer}) // no usage
	run, res := r.run(context.Background())
	if res.Infrastructure || run.Status != runs.StatusSucceeded {
		t.Fatalf("run %s %q", run.Status, run.ErrorMessage)
	}
	if len(run.Steps) != 1 || !run.Steps[0].Estimated || run.Steps[0].PromptTokens != agent.EstimateTokens(int64(len("hello"))) ||
		run.Steps[0].CompletionTokens != agent.EstimateTokens(1000) || run.CostMicros <= 0 || run.Tokens.Total != run.Steps[0].PromptTokens+run.Steps[0].CompletionTokens {
		t.Fatalf("steps %+v tokens %+v cost %d", run.Steps, run.Tokens, run.CostMicros)
	}
	if logs := r.logs.String(); !strings.Contains(logs, "contract violation") || !strings.Contains(logs, `"missing":"usage"`) {
		t.Errorf("the missing usage is not logged as a contract violation: %s", logs)
	}
}
