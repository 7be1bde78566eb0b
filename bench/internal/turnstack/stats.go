package turnstack

import (
	"github.com/commonly/runtime/bench/internal/procstat"
	"github.com/commonly/runtime/infra/localstack"
)

// Stats is what the turn process reports at GET /stats.
type Stats struct {
	DynamoDB localstack.Calls `json:"dynamodb"`
	Proc     procstat.Usage   `json:"proc"`
}
