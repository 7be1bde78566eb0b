package localstack

import (
	"context"
	"io"
	"net/http"
	"strings"
	"time"
)

// Call makes one request of the stack's API as a client does, with a
// bearer token (apigatewaylocal.MintToken) and JSON: the demo's and the
// tests' way in. It answers the status and the body.
func Call(ctx context.Context, method, url, token string, headers map[string]string, body string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 40*time.Second)
	defer cancel()
	return CallWith(ctx, http.DefaultClient, method, url, token, headers, body)
}

// CallWith is Call through client (a benchmark's own, kept alive), with
// no timeout of its own.
func CallWith(ctx context.Context, client *http.Client, method, url, token string, headers map[string]string, body string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, b, err
}
