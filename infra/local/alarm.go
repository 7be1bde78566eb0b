package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	alarmapp "github.com/commonly/runtime/functions/alarm/app"
	"github.com/commonly/runtime/infra/awslocal/eventbridgelocal"
	"github.com/commonly/runtime/internal/dynamodblocal"
)

// localAlarm is the alarm function in the local stack: its handler, fed
// by the runs table's stream through the embedded server's event source
// mapping, puts its events on an EventBridge stand-in that writes each
// one to EVENTS_FILE (JSON lines) and to the output.
type localAlarm struct {
	bus  *eventbridgelocal.Server
	file *os.File
	// created is whether the stack created file (no EVENTS_FILE): it is
	// removed when the stack stops, while a named one is kept.
	created bool
	cfg     alarmapp.Config
	stop    func()
}

// startAlarmBus starts the EventBridge stand-in and opens EVENTS_FILE
// (default: a new file in the temporary directory). It sets the SDK's
// EventBridge endpoint variable, so it must run before the AWS
// configuration is loaded.
func startAlarmBus(env map[string]string, out io.Writer) (*localAlarm, error) {
	cfg, err := alarmapp.LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		return nil, fmt.Errorf("alarm config: %w", err)
	}
	path := env["EVENTS_FILE"]
	var f *os.File
	if path == "" {
		f, err = os.CreateTemp("", "commonly-events-*.jsonl")
	} else {
		f, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	}
	if err != nil {
		return nil, fmt.Errorf("events file: %w", err)
	}
	a := &localAlarm{file: f, created: path == "", cfg: cfg}
	a.bus, err = eventbridgelocal.Start(eventbridgelocal.Config{Out: io.MultiWriter(f, &prefixLines{w: out, prefix: "  EventBridge <- "})})
	if err != nil {
		a.close()
		return nil, err
	}
	os.Setenv(eventbridgelocal.EndpointVar, a.bus.URL)
	return a, nil
}

// subscribe wires the alarm function with the stack's clients and maps
// the runs table's stream to its handler, as the stack's event source
// mapping does (partial batch failures reported). onBatch, if set, is
// called after each batch (tests wait on it).
func (a *localAlarm) subscribe(ctx context.Context, db *dynamodblocal.Server, ddb *dynamodb.Client, eb *eventbridge.Client, runsTable string, log *slog.Logger, onBatch func()) error {
	h, err := alarmapp.Build(a.cfg, alarmapp.Deps{Dynamo: ddb, EventBridge: eb, Log: log})
	if err != nil {
		return err
	}
	handle := h.Handle
	if onBatch != nil {
		handle = func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			defer onBatch()
			return h.Handle(ctx, ev)
		}
	}
	a.stop, err = db.Subscribe(ctx, runsTable, handle, dynamodblocal.MappingConfig{ReportBatchItemFailures: true, FunctionName: "AlarmFunction"})
	return err
}

// label is the start banner's line.
func (a *localAlarm) label() string {
	path, _ := filepath.Abs(a.file.Name())
	kept := "EVENTS_FILE, kept"
	if a.created {
		kept = "removed at stop; set EVENTS_FILE to keep them"
	}
	return fmt.Sprintf("the runs stream → the alarm function (alarm at %s a user-day, DAILY_SPEND_ALARM_USD); events on bus %q at %s, written to %s (%s)",
		"$"+a.cfg.Threshold.USD(), a.cfg.EventBus, a.bus.URL, path, kept)
}

// close stops the mapping and the bus, and removes the events file if
// the stack created it.
func (a *localAlarm) close() {
	if a.stop != nil {
		a.stop()
	}
	if a.bus != nil {
		_ = a.bus.Close()
	}
	_ = a.file.Close()
	if a.created {
		_ = os.Remove(a.file.Name())
	}
}

// prefixLines writes each line it is given behind a prefix.
type prefixLines struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
}

func (p *prefixLines) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if _, err := io.WriteString(p.w, p.prefix); err != nil {
			return 0, err
		}
		if _, err := p.w.Write(line); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}
