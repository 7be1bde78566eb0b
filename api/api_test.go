package api_test

import (
	"encoding/json"
	"testing"

	"github.com/commonly/runtime/api"
	"github.com/commonly/runtime/api/apitest"
	"github.com/commonly/runtime/api/internal/yamljson"
)

// TestJSONIsGeneratedFromYAML: the served openapi.json is exactly what
// openapi.yaml converts to.
func TestJSONIsGeneratedFromYAML(t *testing.T) {
	want, err := yamljson.ConvertFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if api.JSON != string(want) {
		t.Fatal("api/openapi.json is out of date with api/openapi.yaml: run `go generate ./api`")
	}
}

// TestDocumentIsValidOpenAPI31: the document loads, is OpenAPI 3.1 and
// valid, every example included (kin-openapi validates examples against
// their schemas).
func TestDocumentIsValidOpenAPI31(t *testing.T) {
	v, err := apitest.New()
	if err != nil {
		t.Fatal(err)
	}
	if !v.Document().IsOpenAPI31OrLater() {
		t.Errorf("openapi = %q, want 3.1", v.Document().OpenAPI)
	}
	if got := v.ProblemTypes(); len(got) == 0 {
		t.Error("the document declares no problem types")
	}
}

// TestABadExampleIsCaught: an example that does not match its schema
// makes the document invalid, so examples cannot drift from schemas.
func TestABadExampleIsCaught(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal([]byte(api.JSON), &doc); err != nil {
		t.Fatal(err)
	}
	usage := doc["paths"].(map[string]any)["/v1/me/usage"].(map[string]any)["get"].(map[string]any)
	ex := usage["responses"].(map[string]any)["200"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["examples"].(map[string]any)
	for _, e := range ex {
		e.(map[string]any)["value"].(map[string]any)["turnsUsed"] = "three"
	}
	bad, _ := json.Marshal(doc)
	if _, err := apitest.NewFromData(bad); err == nil {
		t.Fatal("a usage example with a string turnsUsed passed validation")
	}
}
