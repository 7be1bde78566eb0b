package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// streamFile holds a session's runs-stream records not yet delivered to
// the alarm function, one JSON record a line: what its turns and sweeps
// wrote to the runs table, in the stream's order.
const streamFile = "runs-stream.jsonl"

// StreamEvent is the event name (-e stream) of the session's pending
// runs-stream records, delivered as the event source mapping delivers
// them: the alarm function counts the session's own runs.
const StreamEvent = "stream"

// batchSize is Lambda's default batch of a DynamoDB stream mapping.
const batchSize = 100

// keepStream appends the runs-stream records the invoke wrote (from the
// position after the restore) to the session's pending records.
func (s *session) keepStream(ctx context.Context) error {
	if s.dir == "" {
		return nil
	}
	recs, _, err := s.st.DB.StreamRecords(ctx, s.st.Tables.Runs, s.streamFrom)
	if err != nil || len(recs) == 0 {
		return err
	}
	f, err := os.OpenFile(filepath.Join(s.dir, streamFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	for _, r := range recs {
		if _, err := f.Write(append(bytes.TrimSpace(r), '\n')); err != nil {
			_ = f.Close()
			return err
		}
	}
	return f.Close()
}

// pendingStream reads the session's pending records.
func pendingStream(dir string) ([]json.RawMessage, error) {
	f, err := os.Open(filepath.Join(dir, streamFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var recs []json.RawMessage
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		recs = append(recs, json.RawMessage(bytes.Clone(sc.Bytes())))
	}
	return recs, sc.Err()
}

// streamBatch is the alarm's event of the session's oldest pending
// records, at most a batch, and how many it holds.
func streamBatch(dir string) ([]byte, int, error) {
	if dir == "" {
		return nil, 0, errors.New("-e stream delivers a session's runs stream: give it SESSION=dir")
	}
	recs, err := pendingStream(dir)
	if err != nil {
		return nil, 0, err
	}
	if len(recs) == 0 {
		return nil, 0, errors.New("the session's runs stream has no record the alarm function has not had")
	}
	recs = recs[:min(len(recs), batchSize)]
	b, err := json.Marshal(map[string]any{"Records": recs})
	return b, len(recs), err
}

// delivered drops the first n pending records, less those from the
// first one the alarm function reported failed (its batch item
// failures, by sequence number): those it gets again next time, as the
// mapping retries a batch from its first failure.
func delivered(dir string, n int, answer []byte) error {
	recs, err := pendingStream(dir)
	if err != nil {
		return err
	}
	var resp struct {
		Failures []struct {
			ID string `json:"itemIdentifier"`
		} `json:"batchItemFailures"`
	}
	_ = json.Unmarshal(answer, &resp)
	failed := map[string]bool{}
	for _, f := range resp.Failures {
		failed[f.ID] = true
	}
	done := 0
	for done < min(n, len(recs)) {
		var r struct {
			Change struct{ SequenceNumber string } `json:"dynamodb"`
		}
		if json.Unmarshal(recs[done], &r) == nil && failed[r.Change.SequenceNumber] {
			break
		}
		done++
	}
	var b bytes.Buffer
	for _, r := range recs[done:] {
		b.Write(r)
		b.WriteByte('\n')
	}
	tmp := filepath.Join(dir, streamFile+".tmp")
	if err := os.WriteFile(tmp, b.Bytes(), 0o600); err != nil {
		return fmt.Errorf("session: %w", err)
	}
	return os.Rename(tmp, filepath.Join(dir, streamFile))
}
