package handler

import (
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/ledger"
	"github.com/commonly/runtime/shared/runs"
)

// toRecord translates a stream record. Only the attributes the ledger
// reads are converted: ImageAttributes, and the report's facts only of a
// finished run's new image (newAttributes). An attribute that cannot be
// converted is left out, and the ledger then finds the image malformed.
func toRecord(r events.DynamoDBEventRecord) ledger.Record {
	return ledger.Record{
		Seq: r.Change.SequenceNumber,
		Op:  ledger.Op(r.EventName),
		New: toImage(r.Change.NewImage, newAttributes(r.Change.NewImage)),
		Old: toImage(r.Change.OldImage, ledger.ImageAttributes),
	}
}

// newAttributes are the attributes the ledger reads of a new image:
// FinishedImageAttributes when its status is final, else ImageAttributes.
func newAttributes(img map[string]events.DynamoDBAttributeValue) []string {
	if st, ok := img["status"]; ok && st.DataType() == events.DataTypeString && runs.Status(st.String()).Final() {
		return ledger.FinishedImageAttributes
	}
	return ledger.ImageAttributes
}

func toImage(img map[string]events.DynamoDBAttributeValue, names []string) map[string]types.AttributeValue {
	if img == nil {
		return nil
	}
	out := make(map[string]types.AttributeValue, len(names))
	for _, name := range names {
		if v, ok := img[name]; ok {
			if av, err := toAttributeValue(v); err == nil {
				out[name] = av
			}
		}
	}
	return out
}

// toAttributeValue converts the Lambda event's attribute value to the
// SDK's, for every DynamoDB data type.
func toAttributeValue(v events.DynamoDBAttributeValue) (types.AttributeValue, error) {
	switch v.DataType() {
	case events.DataTypeString:
		return &types.AttributeValueMemberS{Value: v.String()}, nil
	case events.DataTypeNumber:
		return &types.AttributeValueMemberN{Value: v.Number()}, nil
	case events.DataTypeBoolean:
		return &types.AttributeValueMemberBOOL{Value: v.Boolean()}, nil
	case events.DataTypeNull:
		return &types.AttributeValueMemberNULL{Value: true}, nil
	case events.DataTypeBinary:
		return &types.AttributeValueMemberB{Value: v.Binary()}, nil
	case events.DataTypeStringSet:
		return &types.AttributeValueMemberSS{Value: v.StringSet()}, nil
	case events.DataTypeNumberSet:
		return &types.AttributeValueMemberNS{Value: v.NumberSet()}, nil
	case events.DataTypeBinarySet:
		return &types.AttributeValueMemberBS{Value: v.BinarySet()}, nil
	case events.DataTypeList:
		list := v.List()
		out := make([]types.AttributeValue, len(list))
		for i, e := range list {
			av, err := toAttributeValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = av
		}
		return &types.AttributeValueMemberL{Value: out}, nil
	case events.DataTypeMap:
		m := v.Map()
		out := make(map[string]types.AttributeValue, len(m))
		for k, e := range m {
			av, err := toAttributeValue(e)
			if err != nil {
				return nil, err
			}
			out[k] = av
		}
		return &types.AttributeValueMemberM{Value: out}, nil
	}
	return nil, fmt.Errorf("attribute of unknown type %d", v.DataType())
}
