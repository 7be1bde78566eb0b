package llm

import (
	"encoding/json"
	"net/http"
	"strings"
)

// errorBody is what an error answer says, decoded leniently: LiteLLM's
// {"error":{"message","type","param","code"}} where message may be an
// object (guardrails) and code a string or a number, a bare
// {"error":"text"}, or FastAPI's {"detail": ...}.
type errorBody struct {
	// Message is error.message when it is a string; empty otherwise.
	Message string
	Type    string
	// raw holds every part that may name a refusal, as JSON text.
	raw []string
}

func parseErrorBody(body []byte) errorBody {
	var top struct {
		Error  json.RawMessage `json:"error"`
		Detail json.RawMessage `json:"detail"`
	}
	var e errorBody
	if json.Unmarshal(body, &top) != nil {
		return e
	}
	e.raw = append(e.raw, string(top.Detail))
	var inner struct {
		Message json.RawMessage `json:"message"`
		Type    json.RawMessage `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	switch {
	case len(top.Error) > 0 && top.Error[0] == '"':
		_ = json.Unmarshal(top.Error, &e.Message)
		e.raw = append(e.raw, string(top.Error))
	case json.Unmarshal(top.Error, &inner) == nil:
		e.Message = jsonString(inner.Message)
		e.Type = jsonString(inner.Type)
		e.raw = append(e.raw, string(inner.Message), string(inner.Type), string(inner.Code))
	}
	return e
}

// jsonString returns raw as a string when it is a JSON string.
func jsonString(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// refusalMarkers name a guardrail, moderation, content-policy or
// prompt-injection block in LiteLLM's and providers' error texts
// (e.g. "Violated guardrail policy", ContentPolicyViolationError).
var refusalMarkers = []string{
	"guardrail",
	"moderation",
	"content policy", "content_policy", "contentpolicy",
	"content management policy", "content_filter",
	"prompt injection", "prompt_injection", "promptinjection",
}

// isRefusal reports a policy block. Only client errors count: 408 and 429
// are capacity, and a 5xx naming a guardrail is a guardrail that failed to
// run, a fault worth retrying rather than a refusal.
func isRefusal(status int, e errorBody) bool {
	if status < 400 || status >= 500 || status == http.StatusRequestTimeout || status == http.StatusTooManyRequests {
		return false
	}
	for _, r := range e.raw {
		t := strings.ToLower(r)
		for _, m := range refusalMarkers {
			if strings.Contains(t, m) {
				return true
			}
		}
	}
	return false
}
