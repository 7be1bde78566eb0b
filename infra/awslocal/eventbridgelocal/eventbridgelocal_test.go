package eventbridgelocal_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/smithy-go"

	"github.com/commonly/runtime/infra/awslocal/eventbridgelocal"
)

func start(t *testing.T, cfg eventbridgelocal.Config) (*eventbridgelocal.Server, *eventbridge.Client) {
	t.Helper()
	s, err := eventbridgelocal.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s, s.Client()
}

func TestPutEventsAppendsDeliveredEvents(t *testing.T) {
	file := filepath.Join(t.TempDir(), "events.jsonl")
	at := time.Date(2026, 12, 2, 23, 59, 59, 0, time.UTC)
	s, client := start(t, eventbridgelocal.Config{EventsFile: file, Now: func() time.Time { return at }})
	out, err := client.PutEvents(context.Background(), &eventbridge.PutEventsInput{Entries: []types.PutEventsRequestEntry{
		{Source: aws.String("commonly.hosted-runtime"), DetailType: aws.String("SpendAlarmRaised"),
			Detail: aws.String(`{"userId":"user-1","costMicros":2000000}`), EventBusName: aws.String("bus-1")},
		{Source: aws.String("commonly.hosted-runtime"), DetailType: aws.String("Other"), Detail: aws.String(`{}`),
			Time: aws.Time(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if out.FailedEntryCount != 0 || len(out.Entries) != 2 || aws.ToString(out.Entries[0].EventId) == "" {
		t.Fatalf("output: %+v", out)
	}
	got := s.Events()
	if len(got) != 2 || got[0].Bus != "bus-1" || got[1].Bus != "default" || got[0].ID != aws.ToString(out.Entries[0].EventId) {
		t.Fatalf("events: %+v", got)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 {
		t.Fatalf("%d lines", len(lines))
	}
	first := lines[0]
	detail, _ := first["detail"].(map[string]any)
	if first["source"] != "commonly.hosted-runtime" || first["detail-type"] != "SpendAlarmRaised" || first["version"] != "0" ||
		first["time"] != "2026-12-02T23:59:59Z" || first["account"] != "123456789012" || first["region"] != "us-east-1" ||
		detail["userId"] != "user-1" || detail["costMicros"] != float64(2000000) {
		t.Errorf("first event: %v", first)
	}
	if lines[1]["time"] != "2026-12-01T00:00:00Z" {
		t.Errorf("an entry's own Time is kept: %v", lines[1]["time"])
	}
}

func TestPutEventsReportsFailedEntries(t *testing.T) {
	fail := true
	s, client := start(t, eventbridgelocal.Config{Fail: func(e eventbridgelocal.Entry) bool { return fail && e.DetailType == "Flaky" }})
	entry := func(detailType, detail string) types.PutEventsRequestEntry {
		return types.PutEventsRequestEntry{Source: aws.String("s"), DetailType: aws.String(detailType), Detail: aws.String(detail)}
	}
	out, err := client.PutEvents(context.Background(), &eventbridge.PutEventsInput{Entries: []types.PutEventsRequestEntry{
		entry("Ok", `{}`), entry("Bad", `not json`), entry("Flaky", `{}`), entry("Bad", `[1]`),
	}})
	if err != nil {
		t.Fatal(err)
	}
	codes := []string{}
	for _, e := range out.Entries {
		codes = append(codes, aws.ToString(e.ErrorCode))
	}
	if out.FailedEntryCount != 3 || strings.Join(codes, ",") != ",MalformedDetail,InternalFailure,MalformedDetail" {
		t.Fatalf("failed %d, codes %v", out.FailedEntryCount, codes)
	}
	fail = false
	if out, err := client.PutEvents(context.Background(), &eventbridge.PutEventsInput{Entries: []types.PutEventsRequestEntry{entry("Flaky", `{}`)}}); err != nil || out.FailedEntryCount != 0 {
		t.Fatalf("retry: %v %+v", err, out)
	}
	if n := len(s.Events()); n != 2 {
		t.Fatalf("%d events kept, want the two accepted", n)
	}
}

func TestPutEventsRejectsMoreThanTenEntries(t *testing.T) {
	_, client := start(t, eventbridgelocal.Config{})
	entries := make([]types.PutEventsRequestEntry, 11)
	for i := range entries {
		entries[i] = types.PutEventsRequestEntry{Source: aws.String("s"), DetailType: aws.String("d"), Detail: aws.String(`{}`)}
	}
	_, err := client.PutEvents(context.Background(), &eventbridge.PutEventsInput{Entries: entries})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ValidationException" {
		t.Fatalf("err = %v", err)
	}
}

func entry(detail string) types.PutEventsRequestEntry {
	return types.PutEventsRequestEntry{Source: aws.String("s"), DetailType: aws.String("t"), Detail: aws.String(detail),
		EventBusName: aws.String("bus"), Time: aws.Time(time.Date(2026, 12, 3, 0, 0, 1, 0, time.UTC))}
}

// The real SDK client talks to the stand-in as to EventBridge.
func TestPutEventsThroughTheSDK(t *testing.T) {
	var lines bytes.Buffer
	srv, err := eventbridgelocal.Start(eventbridgelocal.Config{Out: &lines})
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
