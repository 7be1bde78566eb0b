package localstack_test

import (
	"context"
	"encoding/json"
	"testing"

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

// call is Call.
var call = localstack.Call

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
