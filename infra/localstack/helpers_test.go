package localstack_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/commonly/runtime/infra/localstack"
)

// start starts the stack as cfg says and stops it when the test ends.
func start(t *testing.T, cfg localstack.Config) *localstack.Stack {
	t.Helper()
	st, err := localstack.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

// call makes one request of the API with a bearer token.
func call(ctx context.Context, method, url, token string, headers map[string]string, body string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 40*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, b, err
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
