package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/commonly/runtime/internal/dynamodblocal"
)

// stateFile is where a session keeps the embedded DynamoDB's items
// between invokes (SESSION=dir): each table's items in DynamoDB's JSON,
// as Scan returns them.
const stateFile = "dynamodb.json"

// tableItems are a table's items as DynamoDB's JSON.
type tableItems map[string][]json.RawMessage

// dynamoCall is one DynamoDB JSON API call on the embedded server, as the
// SDK makes it: signed with SigV4 and the server's dummy credentials
// (DynamoDB refuses an unsigned request, and so does the server). The items
// stay in DynamoDB's JSON, which the SDK's attribute values do not write.
func dynamoCall(ctx context.Context, url, op string, in any, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: dynamodblocal.AccessKeyID, SecretAccessKey: dynamodblocal.SecretAccessKey}
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "dynamodb", dynamodblocal.Region, time.Now()); err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %d %s", op, res.StatusCode, b)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

// saveState writes every item of the tables to dir/dynamodb.json.
func saveState(ctx context.Context, dbURL, dir string, tables ...string) error {
	all := tableItems{}
	for _, table := range tables {
		in := map[string]any{"TableName": table}
		for {
			var page struct {
				Items            []json.RawMessage
				LastEvaluatedKey json.RawMessage
			}
			if err := dynamoCall(ctx, dbURL, "Scan", in, &page); err != nil {
				return fmt.Errorf("session: save %s: %w", table, err)
			}
			all[table] = append(all[table], page.Items...)
			if len(page.LastEvaluatedKey) == 0 || string(page.LastEvaluatedKey) == "null" {
				break
			}
			in["ExclusiveStartKey"] = page.LastEvaluatedKey
		}
	}
	b, err := json.MarshalIndent(all, "", " ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, stateFile))
}

// loadState puts the items dir/dynamodb.json holds back into the tables;
// a session without the file starts empty.
func loadState(ctx context.Context, dbURL, dir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var all tableItems
	if err := json.Unmarshal(b, &all); err != nil {
		return 0, fmt.Errorf("session: %s: %w", filepath.Join(dir, stateFile), err)
	}
	n := 0
	for table, items := range all {
		for _, item := range items {
			if err := dynamoCall(ctx, dbURL, "PutItem", map[string]any{"TableName": table, "Item": item}, nil); err != nil {
				return n, fmt.Errorf("session: restore %s: %w", table, err)
			}
			n++
		}
	}
	return n, nil
}

// withRunID is an event naming a run (pathParameters.runId, or a
// dispatch's runId) with that run id replaced by runID wherever the event
// holds it: the event files' run id is not one a session created.
func withRunID(payload []byte, runID string) ([]byte, error) {
	var ev struct {
		PathParameters map[string]string `json:"pathParameters"`
		Dispatch       *struct {
			RunID string `json:"runId"`
		} `json:"dispatch"`
	}
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, err
	}
	old := ev.PathParameters["runId"]
	if ev.Dispatch != nil {
		old = ev.Dispatch.RunID
	}
	if old == "" {
		return nil, errors.New("-run-id: the event names no run (pathParameters.runId or dispatch.runId)")
	}
	return bytes.ReplaceAll(payload, []byte(old), []byte(runID)), nil
}
