package handler

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"reflect"
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

// decodeBody decodes a request's body into dst, a pointer to a struct,
// the one way every body of the API is read:
//   - the Content-Type is application/json (a charset, if given, UTF-8),
//     else 415 before the body is read;
//   - at most MaxBodyBytes, and not empty;
//   - one JSON object with nothing after it, whose field names are
//     exactly dst's (encoding/json would also take "MESSAGE" for
//     "message"), each at most once, and whose strings are valid UTF-8
//     without unpaired surrogate escapes (encoding/json would silently
//     make either U+FFFD): checkJSON;
//   - every field of the type dst declares.
func decodeBody(req *events.APIGatewayV2HTTPRequest, dst any) error {
	if err := jsonContentType(header(req.Headers, "content-type")); err != nil {
		return err
	}
	raw := []byte(req.Body)
	if req.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(req.Body)
		if err != nil {
			return malformed("body", "is not valid base64")
		}
		raw = b
	}
	if len(raw) > MaxBodyBytes {
		return &bodyError{field: "body", reason: fmt.Sprintf("is larger than %d bytes", MaxBodyBytes), kind: bodyTooLarge}
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return malformed("body", "is empty; a JSON object is required")
	}
	if err := checkJSON(raw, reflect.TypeOf(dst)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return malformed(te.Field, "must be a "+jsonKind(te.Type.Kind().String()))
		}
		// checkJSON has seen the syntax, the names and the object.
		return malformed("body", "is not a valid JSON object")
	}
	return nil
}

// jsonContentType accepts application/json, with no parameter but a
// UTF-8 charset (JSON is UTF-8, RFC 8259): the document's only request
// type. Anything else, or none, is the client's mistake to hear about
// rather than a body to guess at.
func jsonContentType(v string) error {
	refused := &bodyError{field: "Content-Type", reason: "must be application/json", kind: unsupportedMediaType}
	mt, params, err := mime.ParseMediaType(v)
	if err != nil || mt != "application/json" {
		return refused
	}
	for k, val := range params {
		if k != "charset" || !strings.EqualFold(val, "utf-8") {
			return refused
		}
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

// bodyErrorKind is what is wrong with a body; problemFor maps each kind
// to its problem type.
type bodyErrorKind int

const (
	malformedBody bodyErrorKind = iota
	bodyTooLarge
	unsupportedMediaType
)

type bodyError struct {
	field, reason string
	kind          bodyErrorKind
}

func (e *bodyError) Error() string { return e.field + " " + e.reason }

func malformed(field, reason string) error { return &bodyError{field: field, reason: reason} }

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
