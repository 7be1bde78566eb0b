package secrets_test

import (
	"context"
	"strings"
	"testing"

	"github.com/commonly/runtime/shared/secrets"
)

const (
	llmARN   = "arn:aws:secretsmanager:us-east-1:123456789012:secret:llm-AbCdEf"
	e2bARN   = "arn:aws:secretsmanager:us-east-1:123456789012:secret:e2b-GhIjKl"
	emptyARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:empty-MnOpQr"
	binARN   = "arn:aws:secretsmanager:us-east-1:123456789012:secret:bin-StUvWx"
	goneARN  = "arn:aws:secretsmanager:us-east-1:123456789012:secret:gone-YzAbCd"
)

func ptr(s string) *string { return &s }

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestResolveReadsEachSecretOnceByARN(t *testing.T) {
	fake, client := newFakeSecretsManager(t, map[string]fakeSecret{
		llmARN: {str: ptr("sk-llm-value")},
		e2bARN: {str: ptr("e2b_value")},
	})
	getenv, err := secrets.Resolve(context.Background(), env(map[string]string{
		"LLM_API_KEY_SECRET_ARN": llmARN,
		"E2B_API_KEY_SECRET_ARN": " " + e2bARN + " ",
		"LLM_MODEL":              "deepseek-v4-flash",
		"BROKER_TOKEN":           "plain-local-token",
	}), client, secrets.Names...)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		for name, want := range map[string]string{
			"LLM_API_KEY": "sk-llm-value", "E2B_API_KEY": "e2b_value",
			"LLM_MODEL": "deepseek-v4-flash", "BROKER_TOKEN": "plain-local-token", "SEARCH_API_KEY": "",
			"LLM_API_KEY_SECRET_ARN": llmARN,
		} {
			if got := getenv(name); got != want {
				t.Errorf("%s = %q, want %q", name, got, want)
			}
		}
	}
	if fake.callsTo(llmARN) != 1 || fake.callsTo(e2bARN) != 1 || fake.totalCalls() != 2 {
		t.Errorf("calls: llm %d, e2b %d, total %d; want each secret read once", fake.callsTo(llmARN), fake.callsTo(e2bARN), fake.totalCalls())
	}
}

func TestResolveWithoutARNsCallsNothing(t *testing.T) {
	fake, client := newFakeSecretsManager(t, nil)
	getenv, err := secrets.Resolve(context.Background(), env(map[string]string{"LLM_API_KEY": "local-key"}), client, secrets.Names...)
	if err != nil {
		t.Fatal(err)
	}
	if getenv("LLM_API_KEY") != "local-key" || fake.totalCalls() != 0 {
		t.Fatalf("LLM_API_KEY %q, calls %d", getenv("LLM_API_KEY"), fake.totalCalls())
	}
}

func TestResolveOnlyTheNamesGiven(t *testing.T) {
	fake, client := newFakeSecretsManager(t, map[string]fakeSecret{llmARN: {str: ptr("v")}})
	getenv, err := secrets.Resolve(context.Background(), env(map[string]string{"OTHER_SECRET_ARN": llmARN}), client, "LLM_API_KEY")
	if err != nil {
		t.Fatal(err)
	}
	if getenv("OTHER") != "" || fake.totalCalls() != 0 {
		t.Fatalf("a variable outside names was resolved: %q, %d calls", getenv("OTHER"), fake.totalCalls())
	}
}

func TestResolveJoinsErrorsNamingEachVariableAndNoValue(t *testing.T) {
	_, client := newFakeSecretsManager(t, map[string]fakeSecret{
		llmARN:   {str: ptr("sk-must-not-leak")},
		emptyARN: {},
		binARN:   {binary: []byte("binary-must-not-leak")},
	})
	_, err := secrets.Resolve(context.Background(), env(map[string]string{
		"LLM_API_KEY_SECRET_ARN":      llmARN,
		"E2B_API_KEY_SECRET_ARN":      emptyARN,
		"SEARCH_API_KEY_SECRET_ARN":   binARN,
		"BROKER_TOKEN_SECRET_ARN":     goneARN,
		"DO_RUNTIME_TOKEN":            "plain",
		"DO_RUNTIME_TOKEN_SECRET_ARN": llmARN,
	}), client, secrets.Names...)
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, want := range []string{
		"DO_RUNTIME_TOKEN and DO_RUNTIME_TOKEN_SECRET_ARN are both set",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	// Conflicting sources are reported before anything is fetched.
	if strings.Contains(msg, "E2B_API_KEY_SECRET_ARN") {
		t.Errorf("fetched despite a conflict: %q", msg)
	}

	_, err = secrets.Resolve(context.Background(), env(map[string]string{
		"LLM_API_KEY_SECRET_ARN":    llmARN,
		"E2B_API_KEY_SECRET_ARN":    emptyARN,
		"SEARCH_API_KEY_SECRET_ARN": binARN,
		"BROKER_TOKEN_SECRET_ARN":   goneARN,
	}), client, secrets.Names...)
	if err == nil {
		t.Fatal("no error")
	}
	msg = err.Error()
	for _, want := range []string{
		"E2B_API_KEY_SECRET_ARN: read secret " + emptyARN, "staging label: AWSCURRENT",
		"SEARCH_API_KEY_SECRET_ARN: secret " + binARN + " has no string value",
		"BROKER_TOKEN_SECRET_ARN: read secret " + goneARN, "ResourceNotFoundException",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	for _, leak := range []string{"sk-must-not-leak", "binary-must-not-leak", "LLM_API_KEY"} {
		if strings.Contains(msg, leak) {
			t.Errorf("error %q contains %q", msg, leak)
		}
	}
}
