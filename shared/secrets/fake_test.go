package secrets_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// fakeSecret is one stored secret: a string, a binary, or none yet (a
// secret created without a value has no AWSCURRENT version).
type fakeSecret struct {
	str    *string
	binary []byte
}

// fakeSecretsManager serves GetSecretValue of the Secrets Manager JSON 1.1
// API as documented (POST /, X-Amz-Target secretsmanager.GetSecretValue,
// errors as {"__type","message"} with status 400), for the real SDK client.
type fakeSecretsManager struct {
	t       *testing.T
	mu      sync.Mutex
	secrets map[string]fakeSecret // by ARN
	calls   map[string]int        // GetSecretValue calls by SecretId
}

func newFakeSecretsManager(t *testing.T, secrets map[string]fakeSecret) (*fakeSecretsManager, *secretsmanager.Client) {
	f := &fakeSecretsManager{t: t, secrets: secrets, calls: map[string]int{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	client := secretsmanager.NewFromConfig(aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDLOCAL", "local", ""),
	}, func(o *secretsmanager.Options) { o.BaseEndpoint = aws.String(srv.URL) })
	return f, client
}

func (f *fakeSecretsManager) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, typ, msg string) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
	}
	if r.Method != http.MethodPost || r.URL.Path != "/" || r.Header.Get("Content-Type") != "application/x-amz-json-1.1" {
		fail(400, "SerializationException", "not a JSON 1.1 request")
		return
	}
	if !strings.Contains(r.Header.Get("Authorization"), "/secretsmanager/aws4_request") {
		fail(400, "IncompleteSignature", "request not signed for secretsmanager")
		return
	}
	if target := r.Header.Get("X-Amz-Target"); target != "secretsmanager.GetSecretValue" {
		fail(400, "UnknownOperationException", target)
		return
	}
	var in struct {
		SecretID     string `json:"SecretId"`
		VersionID    string `json:"VersionId"`
		VersionStage string `json:"VersionStage"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.SecretID == "" {
		fail(400, "InvalidParameterException", "SecretId is required")
		return
	}
	f.mu.Lock()
	f.calls[in.SecretID]++
	s, ok := f.secrets[in.SecretID]
	f.mu.Unlock()
	if !ok {
		fail(400, "ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
		return
	}
	if s.str == nil && s.binary == nil {
		fail(400, "ResourceNotFoundException", "Secrets Manager can't find the specified secret value for staging label: AWSCURRENT")
		return
	}
	out := map[string]any{
		"ARN": in.SecretID, "Name": in.SecretID[strings.LastIndex(in.SecretID, ":")+1:],
		"VersionId": "a1b2c3d4-5678-90ab-cdef-EXAMPLE11111", "VersionStages": []string{"AWSCURRENT"},
		"CreatedDate": float64(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).Unix()),
	}
	if s.str != nil {
		out["SecretString"] = *s.str
	} else {
		out["SecretBinary"] = s.binary // []byte encodes as base64, as the API's blob
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(out)
}

func (f *fakeSecretsManager) callsTo(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[id]
}

func (f *fakeSecretsManager) totalCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		n += c
	}
	return n
}
