// Package api holds the turn API's contract: the OpenAPI 3.1 document
// written in openapi.yaml and served, as the generated openapi.json, at
// GET /v1/openapi.json. A test keeps the two files in step (regenerate
// with `go generate ./api`); the handler tests validate every request and
// response against the document (package apitest).
package api

import _ "embed"

//go:generate go run gen_json.go

// Path is the route that serves the document, public (no authorizer).
const Path = "/v1/openapi.json"

// JSON is the document as JSON (openapi.json, generated from openapi.yaml).
//
//go:embed openapi.json
var JSON string
