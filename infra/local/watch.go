package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// sseEvent is one event of a run's stream.
type sseEvent struct {
	ID   string
	Type string
	Data map[string]any
}

// readRunEvents reads GET /v1/runs/{runId}/events after lastID and gives
// each event to each as it arrives, until the stream ends; it returns
// the last id read.
func readRunEvents(ctx context.Context, base, token, runID, lastID string, each func(sseEvent)) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/runs/"+runID+"/events", nil)
	if err != nil {
		return lastID, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return lastID, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return lastID, fmt.Errorf("events: %d %s", resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var cur sseEvent
	for sc.Scan() {
		field, value, _ := strings.Cut(sc.Text(), ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "":
			if sc.Text() == "" && cur.Type != "" {
				lastID = cur.ID
				each(cur)
				cur = sseEvent{}
			}
		case "id":
			cur.ID = value
		case "event":
			cur.Type = value
		case "data":
			_ = json.Unmarshal([]byte(value), &cur.Data)
		}
	}
	return lastID, sc.Err()
}

// printEvents prints a run's events as they arrive, one line each,
// resuming with Last-Event-ID if the stream closes before run.finished.
func printEvents(ctx context.Context, base, token, runID string, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	last, done := "", false
	for !done {
		var err error
		last, err = readRunEvents(ctx, base, token, runID, last, func(e sseEvent) {
			fmt.Fprintf(out, "  [%s] %s\n", e.ID, describe(e))
			done = done || e.Type == "run.finished"
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// describe is one event in a few words.
func describe(e sseEvent) string {
	d := e.Data
	s := func(k string) string { return fmt.Sprint(d[k]) }
	switch e.Type {
	case "run.started":
		return "run started on " + s("engine")
	case "model.started":
		return "model " + s("model") + " called"
	case "model.finished":
		return fmt.Sprintf("model answered: %v in (%v cached) / %v out, %v µ$, %v ms", d["promptTokens"], d["cachedPromptTokens"], d["completionTokens"], d["costMicros"], d["latencyMs"])
	case "text.delta":
		return "text: " + oneLine(s("text"), 80)
	case "tool.started":
		return "tool " + s("name") + " " + oneLine(s("args"), 80)
	case "tool.finished":
		if d["ok"] == true {
			return fmt.Sprintf("tool %s ok in %v ms: %s", s("name"), d["durationMs"], oneLine(s("output"), 60))
		}
		return fmt.Sprintf("tool %s failed (%s) in %v ms", s("name"), s("errorKind"), d["durationMs"])
	case "sandbox.created":
		return "sandbox " + s("sandboxId") + " created (" + s("provider") + ")"
	case "sandbox.killed":
		return "sandbox " + s("sandboxId") + " killed"
	case "run.finished":
		return fmt.Sprintf("run %s, %v µ$", s("status"), d["costMicros"])
	}
	return e.Type
}
