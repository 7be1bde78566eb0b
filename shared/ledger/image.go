package ledger

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/tablekeys"
	"github.com/commonly/runtime/shared/utcday"
)

// ErrMalformed marks a record the ledger cannot count: no run id, user or
// day, an invalid sequence number or a negative cost. Such a record is
// skipped (logged and counted), never retried: retrying cannot fix it and
// would block the shard.
var ErrMalformed = errors.New("malformed run record")

// Image is the ledger's view of an AgentRun image: the few attributes a
// day's cost needs, decoded from the runs table's item (runs.Run's
// dynamodbav names) without the steps and messages.
type Image struct {
	RunID      string       `dynamodbav:"runId"`
	UserID     string       `dynamodbav:"userId"`
	Day        string       `dynamodbav:"day"`
	Engine     string       `dynamodbav:"engine"`
	CostMicros money.Micros `dynamodbav:"costMicros"`
}

// ImageAttributes are the attributes Image reads, so a caller holding a
// wider image (a stream record's) converts only these.
var ImageAttributes = []string{"runId", "userId", "day", "engine", "costMicros"}

// FinishedImageAttributes are ImageAttributes and the usage report's facts
// (facts.go): what the ledger reads of a finished run's new image. Only
// such an image holds facts; any other image needs only ImageAttributes.
var FinishedImageAttributes = append(slices.Clone(ImageAttributes), factAttributes...)

// DecodeImage reads and checks a run image. The day is the run's own (its
// admission's UTC day), never the time the record is processed.
func DecodeImage(item map[string]types.AttributeValue) (Image, error) {
	var im Image
	if err := attributevalue.UnmarshalMap(item, &im); err != nil {
		return Image{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	switch {
	case !tablekeys.ValidID(im.RunID):
		return im, fmt.Errorf("%w: no valid runId", ErrMalformed)
	case !tablekeys.ValidID(im.UserID):
		return im, fmt.Errorf("%w: run %s has no valid userId", ErrMalformed, im.RunID)
	case !validDay(im.Day):
		return im, fmt.Errorf("%w: run %s has no valid day (%q)", ErrMalformed, im.RunID, im.Day)
	case im.CostMicros < 0:
		return im, fmt.Errorf("%w: run %s has a negative cost %d", ErrMalformed, im.RunID, im.CostMicros)
	}
	return im, nil
}

// validDay accepts a day exactly as utcday writes it.
func validDay(day string) bool {
	t, err := time.Parse(utcday.Layout, day)
	return err == nil && utcday.Of(t) == day
}
