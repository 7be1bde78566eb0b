package handler

import (
	"github.com/aws/aws-lambda-go/events"

	"github.com/commonly/runtime/api"
)

// openAPIDocument serves the API's OpenAPI document, to anyone: it is
// the contract the frontend generates its client from.
func (h *Handler) openAPIDocument(*request) (events.APIGatewayV2HTTPResponse, error) {
	return events.APIGatewayV2HTTPResponse{
		StatusCode: 200,
		Headers:    map[string]string{"Content-Type": "application/json", "Cache-Control": "public, max-age=300"},
		Body:       api.JSON,
	}, nil
}
