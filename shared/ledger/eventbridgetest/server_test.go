package eventbridgetest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/smithy-go"

	"github.com/commonly/runtime/shared/ledger/eventbridgetest"
)

func entry(detail string) types.PutEventsRequestEntry {
	return types.PutEventsRequestEntry{Source: aws.String("s"), DetailType: aws.String("t"), Detail: aws.String(detail),
		EventBusName: aws.String("bus"), Time: aws.Time(time.Date(2026, 12, 3, 0, 0, 1, 0, time.UTC))}
}

// The real SDK client talks to the stand-in as to EventBridge.
func TestPutEventsThroughTheSDK(t *testing.T) {
	var lines bytes.Buffer
	srv, err := eventbridgetest.Start(&lines)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := srv.Client()
	ctx := context.Background()

	out, err := c.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []types.PutEventsRequestEntry{entry(`{"a":1}`), entry(`[1]`)}})
	if err != nil {
		t.Fatal(err)
	}
	if out.FailedEntryCount != 1 || aws.ToString(out.Entries[0].EventId) == "" || aws.ToString(out.Entries[1].ErrorCode) != "MalformedDetail" {
		t.Fatalf("out %+v", out)
	}
	evs := srv.Events()
	if len(evs) != 1 || evs[0].Bus != "bus" || string(evs[0].Detail) != `{"a":1}` || !evs[0].Time.Equal(time.Date(2026, 12, 3, 0, 0, 1, 0, time.UTC)) {
		t.Fatalf("events %+v", evs)
	}
	var line map[string]any
	if err := json.Unmarshal(lines.Bytes(), &line); err != nil || line["detail-type"] != "t" || line["id"] != evs[0].ID {
		t.Fatalf("line %s: %v", lines.String(), err)
	}

	srv.FailEntries(1)
	out, err = c.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []types.PutEventsRequestEntry{entry(`{}`), entry(`{}`)}})
	if err != nil || out.FailedEntryCount != 1 || aws.ToString(out.Entries[0].ErrorCode) != "InternalFailure" || out.Entries[1].EventId == nil {
		t.Fatalf("failed entry: %+v %v", out, err)
	}

	// 500s are retried by the SDK: two failures and a success make one call.
	before := srv.Requests()
	srv.FailRequests(2)
	if _, err := c.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []types.PutEventsRequestEntry{entry(`{}`)}}); err != nil {
		t.Fatalf("after two retried failures: %v", err)
	}
	if got := srv.Requests() - before; got != 3 {
		t.Fatalf("%d requests, want 3", got)
	}
	srv.FailRequests(3)
	_, err = c.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []types.PutEventsRequestEntry{entry(`{}`)}})
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "InternalException" {
		t.Fatalf("three failures: %v", err)
	}
	if _, err := c.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: make([]types.PutEventsRequestEntry, 11)}); err == nil {
		t.Fatal("11 entries accepted")
	}
}
