package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
)

// eventBridgeAPI is the part of the EventBridge client the publisher uses.
type eventBridgeAPI interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, opts ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

var _ eventBridgeAPI = (*eventbridge.Client)(nil)

// maxEntriesPerPut is PutEvents' limit of entries per call.
const maxEntriesPerPut = 10

// EventBridgeConfig configures the alarm publisher. Client and Bus are
// required.
type EventBridgeConfig struct {
	Client eventBridgeAPI
	// Bus is the event bus's name or ARN (EVENT_BUS_NAME).
	Bus string
	// Now stamps the events; nil is time.Now.
	Now func() time.Time
}

// EventBridge puts spend alarms on an EventBridge bus.
type EventBridge struct{ cfg EventBridgeConfig }

var _ Publisher = (*EventBridge)(nil)

// NewEventBridge checks cfg and returns the publisher.
func NewEventBridge(cfg EventBridgeConfig) (*EventBridge, error) {
	var errs []error
	if cfg.Client == nil {
		errs = append(errs, errors.New("eventbridge publisher: no client"))
	}
	if cfg.Bus == "" {
		errs = append(errs, errors.New("eventbridge publisher: no bus"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &EventBridge{cfg: cfg}, nil
}

// Publish puts one SpendAlarmRaised event per alarm, ten to a call. An
// entry EventBridge did not accept (FailedEntryCount > 0) fails its
// alarm alone; a call that fails fails its entries.
func (e *EventBridge) Publish(ctx context.Context, alarms []Alarm) []error {
	errs := make([]error, len(alarms))
	at := e.cfg.Now()
	for start := 0; start < len(alarms); start += maxEntriesPerPut {
		chunk := alarms[start:min(start+maxEntriesPerPut, len(alarms))]
		entries := make([]types.PutEventsRequestEntry, len(chunk))
		for i, a := range chunk {
			detail, _ := json.Marshal(a) // strings and integers: cannot fail
			entries[i] = types.PutEventsRequestEntry{
				EventBusName: aws.String(e.cfg.Bus),
				Source:       aws.String(EventSource),
				DetailType:   aws.String(AlarmDetailType),
				Detail:       aws.String(string(detail)),
				Time:         aws.Time(at),
			}
		}
		out, err := e.cfg.Client.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: entries})
		for i := range chunk {
			errs[start+i] = entryError(out, err, i)
		}
	}
	return errs
}

// entryError is the outcome of entry i of a PutEvents call.
func entryError(out *eventbridge.PutEventsOutput, err error, i int) error {
	switch {
	case err != nil:
		return fmt.Errorf("put events: %w", err)
	case out == nil || i >= len(out.Entries):
		return fmt.Errorf("put events: no result for entry %d", i)
	case out.Entries[i].ErrorCode != nil:
		return fmt.Errorf("put events: entry refused: %s: %s", aws.ToString(out.Entries[i].ErrorCode), aws.ToString(out.Entries[i].ErrorMessage))
	case aws.ToString(out.Entries[i].EventId) == "":
		return fmt.Errorf("put events: entry %d has no event id", i)
	}
	return nil
}
