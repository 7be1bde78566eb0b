// Package handler is the alarm function's Lambda handler: it translates a
// batch of the runs table's stream records into a ledger batch, and the
// ledger's outcome back into partial batch failures, metrics and one log
// line.
package handler

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/commonly/runtime/shared/ledger"
	"github.com/commonly/runtime/shared/metrics"
)

// Config wires a Handler. Ledger is required.
type Config struct {
	Ledger *ledger.Ledger
	// Log is Lambda's logger in the function; nil is slog.Default().
	Log *slog.Logger
	// Metrics receives one EMF event per batch; nil discards.
	Metrics *metrics.Emitter
	// Now times the batch; nil is time.Now.
	Now func() time.Time
}

// Handler serves the alarm function.
type Handler struct{ cfg Config }

// New checks cfg and returns a Handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Ledger == nil {
		return nil, errors.New("alarm handler: no ledger")
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Handler{cfg: cfg}, nil
}

// Handle counts one batch. It never fails the invocation: a user-day that
// could not be counted or alarmed is reported by sequence number
// (ReportBatchItemFailures), and Lambda retries from the lowest; a record
// that can never be counted is logged, measured and skipped.
func (h *Handler) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	start := h.cfg.Now()
	ctx, span := startBatch(ctx, ev)
	records := make([]ledger.Record, len(ev.Records))
	for i, r := range ev.Records {
		records[i] = toRecord(r)
	}
	res := h.cfg.Ledger.Process(ctx, records)
	defer endBatch(span, res)

	log := h.cfg.Log
	for _, s := range res.Skipped {
		log.ErrorContext(ctx, "stream record skipped", "sequenceNumber", s.Seq, "runId", s.RunID, "err", s.Err)
	}
	for _, f := range res.Failures {
		log.ErrorContext(ctx, "user-day not counted, retried", "userId", f.Key.UserID, "day", f.Key.Day, "sequenceNumber", f.Seq, "err", f.Err)
	}
	log.InfoContext(ctx, "stream batch",
		"records", res.Records, "processed", res.Processed, "skipped", len(res.Skipped), "failed", res.FailedRecords,
		"removes", res.Removes, "userDays", res.Days, "writes", res.Writes, "conflicts", res.Conflicts,
		"costMicros", int64(res.CostMicros), "alarms", res.Alarms, "elapsedMs", h.cfg.Now().Sub(start).Milliseconds())
	// Counts only: ids never become dimensions.
	h.cfg.Metrics.Emit(nil,
		metrics.Metric{Name: "RecordsProcessed", Unit: metrics.Count, Value: float64(res.Processed)},
		metrics.Metric{Name: "RecordsSkipped", Unit: metrics.Count, Value: float64(len(res.Skipped))},
		metrics.Metric{Name: "RecordsFailed", Unit: metrics.Count, Value: float64(res.FailedRecords)},
		metrics.Metric{Name: "CostCountedMicros", Unit: metrics.None, Value: float64(res.CostMicros)},
		metrics.Metric{Name: "SpendAlarmsRaised", Unit: metrics.Count, Value: float64(res.Alarms)},
	)

	out := events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}
	for _, seq := range res.Failed {
		out.BatchItemFailures = append(out.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: seq})
	}
	return out, nil
}
