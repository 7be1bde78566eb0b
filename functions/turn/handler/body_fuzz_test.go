package handler

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// FuzzDecodeBody: whatever the body, decodeBody does not panic, and what
// it accepts is one JSON object of exactly the declared names, each once,
// in valid UTF-8, whose strings hold U+FFFD only where the body wrote one
// (never a replacement the decoder made).
func FuzzDecodeBody(f *testing.F) {
	for _, seed := range []string{
		`{"message":"hi"}`, `{"message":"hi","trigger":"mention"}`, `{"MESSAGE":"x"}`, `{"message":"a","message":"b"}`,
		"{\"message\":\"caf\xe9\"}", `{"message":"\ud83d\ude42"}`, `{"message":"\ud83d"}`, `{"message":"\\ud83d"}`,
		`{"message":"\ufffd"}`, `{"message":"x"}}`, `{"message":"x"} `, `[]`, `null`, `{"trigger":{"a":[1,"\udc00"]}}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var dst struct {
			Message *string `json:"message"`
			Trigger string  `json:"trigger"`
		}
		req := &events.APIGatewayV2HTTPRequest{Body: body, Headers: map[string]string{"content-type": "application/json"}}
		if decodeBody(req, &dst) != nil {
			return
		}
		raw := []byte(body)
		if !utf8.Valid(raw) || !json.Valid(raw) {
			t.Fatalf("accepted a body that is not one UTF-8 JSON text: %q", body)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			t.Fatalf("accepted a body that is not an object: %q", body)
		}
		seen := map[string]bool{}
		for dec.More() {
			tok, _ := dec.Token()
			name := tok.(string)
			if (name != "message" && name != "trigger") || seen[name] {
				t.Fatalf("accepted the name %q (seen before: %v): %q", name, seen[name], body)
			}
			seen[name] = true
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				t.Fatal(err)
			}
		}
		written := strings.Contains(body, "\ufffd") || strings.Contains(strings.ToLower(body), `\ufffd`)
		for _, s := range []string{strOf(dst.Message), dst.Trigger} {
			if strings.ContainsRune(s, utf8.RuneError) && !written {
				t.Fatalf("a replacement character the body did not write: %q → %q", body, s)
			}
		}
	})
}

func strOf(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
