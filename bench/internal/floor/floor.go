// Package floor is the benchmark's lower bound: a handler that makes a
// turn's round trips and nothing else. It answers each API request after
// the same model calls (to the same scripted server, which answers them
// the same way) and the same number of DynamoDB calls (a GetItem each, to
// the same embedded DynamoDB) as our turn, with a bare net/http client:
// no SDK, no signing (a fixed header), no JSON beyond fixed bodies, no
// turn logic.
//
// Run in a process of its own like the turn process, its CPU per request
// is what the transport alone costs on the machine, below which no turn
// that makes those calls over HTTP can go.
package floor

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/commonly/runtime/bench/internal/script"
)

// fixedAuthorization is a SigV4 header of the right shape: the embedded
// DynamoDB refuses a request without one, as DynamoDB does, but checks no
// signature, and computing one is the SDK's cost, not the transport's.
const fixedAuthorization = "AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=0"

// Handler serves the floor's API: every request makes ModelCalls calls to
// LLM and DynamoCalls calls to Dynamo, then answers 200 with a small body.
type Handler struct {
	// LLM is the scripted chat-completions base URL (as LLM_BASE_URL).
	LLM string
	// Dynamo is the DynamoDB endpoint; Table a table with keys pk and sk.
	Dynamo, Table string
	// Model names the model in the chat requests.
	Model                   string
	ModelCalls, DynamoCalls int
	// HTTP is the client of both; its transport keeps connections alive.
	HTTP *http.Client

	modelBodies [][]byte
	dynamoBody  []byte
}

// Init builds the fixed request bodies; call it once before serving.
func (h *Handler) Init() {
	h.modelBodies = make([][]byte, h.ModelCalls)
	for i := range h.modelBodies {
		// The scripted server answers by the number of tool messages, so
		// call i gets the script's answer i, as our turn's does.
		var msgs strings.Builder
		msgs.WriteString(`{"role":"user","content":"floor"}`)
		for j := range i {
			fmt.Fprintf(&msgs, `,{"role":"assistant","tool_calls":[{"id":"call_%d","type":"function","function":{"name":%q,"arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_%d","content":"ok"}`, j+1, script.Tool, j+1)
		}
		h.modelBodies[i] = fmt.Appendf(nil, `{"model":%q,"messages":[%s],"tools":[{"type":"function","function":{"name":%q,"parameters":{"type":"object"}}}],"tool_choice":"auto"}`,
			h.Model, msgs.String(), script.Tool)
	}
	h.dynamoBody = fmt.Appendf(nil, `{"TableName":%q,"Key":{"pk":{"S":"FLOOR"},"sk":{"S":"FLOOR"}}}`, h.Table)
}

// ServeHTTP makes the round trips and answers 200, or 502 naming the call
// that failed (the driver stops on it: a floor that skipped calls would
// not be one).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		http.Error(w, "read request: "+err.Error(), http.StatusBadRequest)
		return
	}
	for i, body := range h.modelBodies {
		if err := h.post(r.Context(), strings.TrimSuffix(h.LLM, "/")+"/chat/completions", body, nil); err != nil {
			http.Error(w, fmt.Sprintf("model call %d: %v", i+1, err), http.StatusBadGateway)
			return
		}
	}
	for i := range h.DynamoCalls {
		if err := h.post(r.Context(), h.Dynamo, h.dynamoBody, map[string]string{
			"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "DynamoDB_20120810.GetItem",
			"Authorization": fixedAuthorization,
		}); err != nil {
			http.Error(w, fmt.Sprintf("DynamoDB call %d: %v", i+1, err), http.StatusBadGateway)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"status":"succeeded"}`))
}

func (h *Handler) post(ctx context.Context, url string, body []byte, headers map[string]string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := h.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%d %.200s", res.StatusCode, b)
	}
	return nil
}
