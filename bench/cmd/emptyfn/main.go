// Command emptyfn is the cold start's floor: a Go Lambda function that
// answers every invocation at once, with the status the turn function's
// first invocation is checked for. `make bench` builds it as the turn's
// bootstrap is built and starts it under the Lambda Runtime Interface
// Emulator as it starts the turn's, so that the table shows how much of
// the cold start is the emulator's and a Go runtime's, and how much the
// turn function's own.
package main

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(context.Context, json.RawMessage) (map[string]int, error) {
		return map[string]int{"statusCode": 200}, nil
	})
}
