//go:build ignore

// gen_json writes openapi.json from openapi.yaml (go generate ./api).
package main

import (
	"log"
	"os"

	"github.com/commonly/runtime/api/internal/yamljson"
)

func main() {
	src, err := os.ReadFile("openapi.yaml")
	if err != nil {
		log.Fatal(err)
	}
	out, err := yamljson.Convert(src)
	if err != nil {
		log.Fatalf("openapi.yaml: %v", err)
	}
	if err := os.WriteFile("openapi.json", out, 0o644); err != nil {
		log.Fatal(err)
	}
}
