package tools

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestDecodeQuery(t *testing.T) {
	cases := []struct {
		args  string
		query string
		n     int
		bad   bool
	}{
		{`{"query":"  agents  "}`, "agents", 5, false},
		{`{"query":"agents","maxResults":10}`, "agents", 10, false},
		{`{"query":"agents","maxResults":11}`, "", 0, true},
		{`{"query":"agents","maxResults":0}`, "", 0, true},
		{`{"query":"   "}`, "", 0, true},
		{`{}`, "", 0, true},
		{`{"query":"ééééééééééé"}`, "", 0, true}, // 11 characters > 10
		{`{"query":"x","limit":3}`, "", 0, true},
	}
	for _, c := range cases {
		q, n, err := DecodeQuery([]byte(c.args), 10, 5, 10)
		if c.bad {
			if !errors.Is(err, ErrBadArguments) {
				t.Errorf("%s: err = %v, want ErrBadArguments", c.args, err)
			}
			continue
		}
		if err != nil || q != c.query || n != c.n {
			t.Errorf("%s: %q %d %v", c.args, q, n, err)
		}
	}
}

// The schema offered is the one DecodeQuery enforces, bounds included.
func TestQueryParameters(t *testing.T) {
	b, err := json.Marshal(QueryParameters(10, 5, 20))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"additionalProperties":false,"properties":{"maxResults":{"description":"Default 5.","maximum":20,"minimum":1,"type":"integer"},"query":{"maxLength":10,"minLength":1,"type":"string"}},"required":["query"],"type":"object"}`
	if string(b) != want {
		t.Errorf("QueryParameters = %s\nwant %s", b, want)
	}
}
