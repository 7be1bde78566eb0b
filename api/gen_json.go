//go:build ignore

// gen_json writes openapi.json from openapi.yaml (go generate ./api).
package main

import (
	"log"
	"os"

	"github.com/commonly/runtime/api/internal/yamljson"
)

func main() {
	out, err := yamljson.ConvertFile("openapi.yaml")
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("openapi.json", out, 0o644); err != nil {
		log.Fatal(err)
	}
}
