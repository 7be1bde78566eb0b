package handler

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// MaxBodyBytes bounds a request body; the largest legitimate body is a
// turn message of 16,000 characters.
const MaxBodyBytes = 128 << 10

// MaxWait is the longest Prefer: wait the API honours, under API
// Gateway's 30-second integration timeout.
const MaxWait = 25

// decodeBody decodes a JSON object strictly: unknown fields, wrong types,
// trailing data and oversized bodies are errors naming what is wrong.
func decodeBody(req *events.APIGatewayV2HTTPRequest, dst any) error {
	raw := []byte(req.Body)
	if req.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(req.Body)
		if err != nil {
			return malformed("body", "is not valid base64")
		}
		raw = b
	}
	if len(raw) > MaxBodyBytes {
		return &bodyError{field: "body", reason: fmt.Sprintf("is larger than %d bytes", MaxBodyBytes), tooLarge: true}
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return malformed("body", "is empty; a JSON object is required")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te):
			field := te.Field
			if field == "" {
				return malformed("body", "must be a JSON object")
			}
			return malformed(field, "must be a "+jsonKind(te.Type.Kind().String()))
		case errors.As(err, &se):
			return malformed("body", fmt.Sprintf("is not valid JSON (at byte %d)", se.Offset))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			name, _ := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
			return malformed(name, "is not a known field")
		case errors.Is(err, io.ErrUnexpectedEOF):
			return malformed("body", "is truncated JSON")
		}
		return malformed("body", "is not a valid JSON object")
	}
	if dec.More() {
		return malformed("body", "has data after the JSON object")
	}
	return nil
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "slice", "array":
		return "array"
	case "map", "struct", "ptr":
		return "object"
	case "bool":
		return "boolean"
	}
	return "number"
}

type bodyError struct {
	field, reason string
	tooLarge      bool
}

func (e *bodyError) Error() string { return e.field + " " + e.reason }

func malformed(field, reason string) error { return &bodyError{field: field, reason: reason} }

func bodyProblem(e *bodyError) *Problem {
	slug, title := "malformed_body", "Malformed request body"
	if e.tooLarge {
		slug, title = "body_too_large", "Request body too large"
	}
	p := problem(400, slug, title, e.Error())
	p.Field = e.field
	return p
}

// preferWait reads "Prefer: wait=N" (RFC 7240), capped at MaxWait seconds.
func preferWait(h map[string]string) (int, bool) {
	for _, pref := range strings.Split(header(h, "prefer"), ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(pref), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "wait") {
			continue
		}
		n, err := strconv.Atoi(strings.Trim(strings.TrimSpace(v), `"`))
		if err != nil || n < 0 {
			return 0, false
		}
		return min(n, MaxWait), true
	}
	return 0, false
}

// header reads a header case-insensitively (API Gateway v2 lower-cases
// names, other callers may not).
func header(h map[string]string, name string) string {
	if v, ok := h[name]; ok {
		return v
	}
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}
