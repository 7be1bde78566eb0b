package eventbus_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/smithy-go"

	"github.com/commonly/runtime/infra/local/eventbus"
)

func start(t *testing.T, cfg eventbus.Config) (*eventbus.Server, *eventbridge.Client) {
	t.Helper()
	s, err := eventbus.Start("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	client := eventbridge.NewFromConfig(aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
	}, func(o *eventbridge.Options) { o.BaseEndpoint = aws.String(s.URL) })
	return s, client
}

func TestPutEventsAppendsDeliveredEvents(t *testing.T) {
	file := filepath.Join(t.TempDir(), "events.jsonl")
	at := time.Date(2026, 12, 2, 23, 59, 59, 0, time.UTC)
	s, client := start(t, eventbus.Config{EventsFile: file, Now: func() time.Time { return at }})
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
	s, client := start(t, eventbus.Config{Fail: func(e eventbus.Entry) bool { return fail && e.DetailType == "Flaky" }})
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
	_, client := start(t, eventbus.Config{})
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
