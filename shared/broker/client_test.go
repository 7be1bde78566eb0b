package broker_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/commonly/runtime/shared/broker"
	"github.com/commonly/runtime/shared/broker/brokertest"
)

func TestNewValidatesConfig(t *testing.T) {
	cases := []struct{ url, token string }{
		{"", "t"},
		{"ftp://broker", "t"},
		{"http://", "t"},
		{"http://broker", " "},
	}
	for _, c := range cases {
		if _, err := broker.New(broker.Config{BaseURL: c.url, Token: c.token}); err == nil {
			t.Errorf("New(%q, %q) succeeded", c.url, c.token)
		}
	}
	if _, err := broker.New(broker.Config{BaseURL: "https://broker.internal/base/", Token: "t"}); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

func TestConnectionActive(t *testing.T) {
	fake := brokertest.New(t)
	c := fake.Client(t)
	fake.SetConnection("u1", "github", broker.StatusActive)
	fake.SetConnection("u2", "github", broker.StatusRevoked)
	fake.SetConnection("u3", "github", broker.StatusExpired)
	fake.SetConnection("u/4", "github", broker.StatusActive)
	fake.SetConnection("u5", "github", "suspended")

	cases := []struct {
		user    string
		want    bool
		wantErr error
	}{
		{"u1", true, nil},
		{"u2", false, nil},
		{"u3", false, nil},
		{"nobody", false, nil}, // 404 is missing, not a failure
		{"u/4", true, nil},     // the id is one escaped path segment
		{"u5", false, broker.ErrUnavailable},
	}
	for _, tc := range cases {
		got, err := c.ConnectionActive(context.Background(), tc.user, "github")
		if got != tc.want || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
			t.Errorf("ConnectionActive(%q) = %v, %v; want %v, %v", tc.user, got, err, tc.want, tc.wantErr)
		}
	}
	calls := fake.Calls()
	if len(calls) != len(cases) {
		t.Fatalf("%d calls, want %d", len(calls), len(cases))
	}
	for i, call := range calls {
		if !call.Authorized || call.UserID != cases[i].user || call.Connector != "github" || call.Method != http.MethodGet {
			t.Errorf("call %d = %+v", i, call)
		}
	}
}

func TestConnectionActiveFailures(t *testing.T) {
	fake := brokertest.New(t)
	fake.SetConnection("u1", "github", broker.StatusActive)

	wrong, err := broker.New(broker.Config{BaseURL: fake.URL, Token: "not-the-service-token"})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := wrong.ConnectionActive(context.Background(), "u1", "github"); ok || !errors.Is(err, broker.ErrUnauthorized) {
		t.Errorf("wrong service token: %v, %v", ok, err)
	}

	c := fake.Client(t)
	for _, status := range []int{http.StatusInternalServerError, http.StatusServiceUnavailable, http.StatusTooManyRequests, http.StatusOK} {
		fake.FailConnections(status)
		ok, err := c.ConnectionActive(context.Background(), "u1", "github")
		if ok || !errors.Is(err, broker.ErrUnavailable) {
			t.Errorf("status %d: %v, %v; want ErrUnavailable", status, ok, err)
		}
		assertNoSecret(t, fake, err)
	}
	fake.FailConnections(0)

	for _, bad := range [][2]string{{"", "github"}, {"u1", ""}, {"..", "github"}, {"u1", "."}} {
		if _, err := c.ConnectionActive(context.Background(), bad[0], bad[1]); err == nil {
			t.Errorf("ConnectionActive(%q, %q) succeeded", bad[0], bad[1])
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.ConnectionActive(ctx, "u1", "github"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
}

func TestToken(t *testing.T) {
	fake := brokertest.New(t)
	c := fake.Client(t)
	ctx := context.Background()

	tok1, err := c.Token(ctx, "u1", broker.AudienceCommonly)
	if err != nil {
		t.Fatal(err)
	}
	tok2, err := c.Token(ctx, "u1", broker.AudienceCommonly)
	if err != nil {
		t.Fatal(err)
	}
	if tok1 == tok2 {
		t.Error("two calls got the same token: the client must not cache")
	}
	if i, ok := fake.Lookup(tok1); !ok || i.UserID != "u1" || i.Audience != broker.AudienceCommonly {
		t.Errorf("token %q not issued to u1 for commonly: %+v", tok1, i)
	}

	if _, err := c.Token(ctx, "u1", broker.AudienceGitHub); !errors.Is(err, broker.ErrNotConnected) {
		t.Errorf("github without a connection: %v, want ErrNotConnected", err)
	}
	fake.SetConnection("u1", "github", broker.StatusActive)
	gh, err := c.Token(ctx, "u1", broker.AudienceGitHub)
	if err != nil {
		t.Fatal(err)
	}
	if i, _ := fake.Lookup(gh); i.Audience != broker.AudienceGitHub {
		t.Errorf("github token issued for %q", i.Audience)
	}
	fake.SetConnection("u1", "github", broker.StatusRevoked)
	if _, err := c.Token(ctx, "u1", broker.AudienceGitHub); !errors.Is(err, broker.ErrNotConnected) {
		t.Errorf("revoked github: %v, want ErrNotConnected", err)
	}

	for _, call := range fake.Calls() {
		if !call.Authorized || call.Method != http.MethodPost {
			t.Errorf("call %+v", call)
		}
	}
}

func TestTokenFailuresNeverCarrySecrets(t *testing.T) {
	fake := brokertest.New(t)
	c := fake.Client(t)
	// A token first, so there is an issued secret to leak.
	if _, err := c.Token(context.Background(), "u1", broker.AudienceCommonly); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		status int
		want   error
	}{
		{http.StatusOK, broker.ErrUnavailable}, // malformed answer
		{http.StatusUnauthorized, broker.ErrUnauthorized},
		{http.StatusForbidden, broker.ErrUnauthorized},
		{http.StatusInternalServerError, broker.ErrUnavailable},
		{http.StatusBadGateway, broker.ErrUnavailable},
	}
	for _, tc := range cases {
		fake.FailTokens(tc.status)
		tok, err := c.Token(context.Background(), "u1", broker.AudienceCommonly)
		if tok != "" || !errors.Is(err, tc.want) {
			t.Errorf("status %d: %q, %v; want %v", tc.status, tok, err, tc.want)
		}
		assertNoSecret(t, fake, err)
	}
}

func TestTokenRejectsIncompleteAnswers(t *testing.T) {
	answers := map[string]string{
		"empty token":       `{"token": "", "expiresAt": "2026-08-20T10:00:00Z"}`,
		"missing expiresAt": `{"token": "tok_x"}`,
		"not JSON":          `tok_x`,
	}
	for name, body := range answers {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte(body))
			}))
			defer srv.Close()
			c, err := broker.New(broker.Config{BaseURL: srv.URL, Token: "svc", HTTPClient: srv.Client()})
			if err != nil {
				t.Fatal(err)
			}
			tok, err := c.Token(context.Background(), "u1", broker.AudienceCommonly)
			if tok != "" || !errors.Is(err, broker.ErrUnavailable) {
				t.Fatalf("%q, %v; want ErrUnavailable", tok, err)
			}
			if strings.Contains(err.Error(), "tok_x") {
				t.Errorf("error quotes the answer: %v", err)
			}
		})
	}
}

func TestConnectionAnswerMustNameTheConnector(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"connector": "slack", "status": "active"}`))
	}))
	defer srv.Close()
	c, err := broker.New(broker.Config{BaseURL: srv.URL, Token: "svc", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := c.ConnectionActive(context.Background(), "u1", "github"); ok || !errors.Is(err, broker.ErrUnavailable) {
		t.Errorf("answer about another connector: %v, %v", ok, err)
	}
}

func assertNoSecret(t *testing.T, fake *brokertest.Server, err error) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range fake.Secrets() {
		if strings.Contains(err.Error(), s) {
			t.Errorf("error %q contains a secret", err)
		}
	}
}

// A "." or ".." id is refused in the broker's words, before any request.
func TestDotSegmentMessage(t *testing.T) {
	fake := brokertest.New(t)
	c := fake.Client(t)
	for _, bad := range []string{".", ".."} {
		_, err := c.Token(context.Background(), bad, broker.AudienceCommonly)
		if want := `token for "commonly": broker: "` + bad + `" is not a valid path segment`; err == nil || err.Error() != want {
			t.Errorf("user %q: err = %v, want %q", bad, err, want)
		}
	}
	if n := len(fake.Calls()); n != 0 {
		t.Errorf("%d broker calls for refused ids", n)
	}
}
