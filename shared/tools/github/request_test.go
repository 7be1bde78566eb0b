package github

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/commonly/runtime/shared/tools"
)

type countingTokens struct{ n int }

func (c *countingTokens) Token(context.Context, string, string) (string, error) {
	c.n++
	return "t", nil
}

type noTransport struct{}

func (noTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("no request expected")
}

// get refuses a segment that path cleaning would drop or climb over,
// before asking for a token, whatever its caller checked.
func TestGetRefusesDotSegments(t *testing.T) {
	toks := &countingTokens{}
	c, err := New(Config{BaseURL: "https://github.test", Tokens: toks, HTTPClient: &http.Client{Transport: noTransport{}}})
	if err != nil {
		t.Fatal(err)
	}
	env := tools.Env{UserID: "u1"}
	for _, bad := range []string{"", ".", ".."} {
		var out struct{}
		_, err := c.get(context.Background(), env, []string{"repos", "acme", bad, "issues", "1"}, nil, &out)
		if !errors.Is(err, tools.ErrBadArguments) {
			t.Errorf("segment %q: err = %v, want ErrBadArguments", bad, err)
		}
		want := `github: invalid arguments: "` + bad + `" is not a valid path segment`
		if err != nil && err.Error() != want {
			t.Errorf("segment %q: err = %q, want %q", bad, err, want)
		}
	}
	if toks.n != 0 {
		t.Errorf("%d tokens asked for refused paths", toks.n)
	}
}
