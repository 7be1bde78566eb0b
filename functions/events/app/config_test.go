package app

import (
	"strings"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/turns"
)

func TestLoadConfig(t *testing.T) {
	env := map[string]string{"STATE_TABLE": "s", "RUNS_TABLE": "r", "JWT_ISSUER": "https://issuer.example", "JWT_AUDIENCE": "a, b"}
	c, err := LoadConfig(func(k string) string { return env[k] })
	if err != nil || c.StreamMax != 14*time.Minute || len(c.JWTAudience) != 2 || c.JWTAudience[1] != "b" || c.StreamsPerUser != turns.DefaultStreamsPerUser {
		t.Fatalf("%+v %v", c, err)
	}
	_, err = LoadConfig(func(k string) string {
		return map[string]string{"JWT_ISSUER": "ftp://x", "STREAM_MAX": "20m", "STREAMS_PER_USER": "0"}[k]
	})
	for _, want := range []string{"STATE_TABLE is required", "RUNS_TABLE is required", "JWT_AUDIENCE is required", "JWT_ISSUER", "STREAM_MAX", "STREAMS_PER_USER"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

func TestFlattenAsTheAuthorizer(t *testing.T) {
	got := Flatten(map[string]any{"sub": "u1", "scope": "commonly/admin x", "aud": []any{"a", "b"}, "exp": 1.5e9})
	if got["sub"] != "u1" || got["scope"] != "commonly/admin x" || got["aud"] != "[a b]" || got["exp"] != "1.5e+09" {
		t.Fatalf("%v", got)
	}
}
