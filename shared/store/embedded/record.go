package embedded

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/truora/minidyn/server"
)

// TTLIdentity is the userIdentity DynamoDB puts on the stream record of an
// item its Time to Live process deleted.
var TTLIdentity = events.DynamoDBUserIdentity{Type: "Service", PrincipalID: "dynamodb.amazonaws.com"}

// sequenceNumber formats a shard's nth record as DynamoDB Local does: 21
// digits, so that sequence numbers order as strings as they do as numbers.
func sequenceNumber(n uint64) string { return fmt.Sprintf("%021d", n) }

// newRecord is the stream record of one change, as Lambda passes it to a
// function: the images the view type asks for, the time rounded down to
// the second.
func newRecord(ch server.ItemChange, seq uint64, at time.Time) events.DynamoDBEventRecord {
	sn := sequenceNumber(seq)
	id := sha256.Sum256([]byte(ch.StreamARN + "/" + sn))
	r := events.DynamoDBEventRecord{
		AWSRegion:      Region,
		EventID:        hex.EncodeToString(id[:16]),
		EventSource:    "aws:dynamodb",
		EventVersion:   "1.1",
		EventSourceArn: ch.StreamARN,
		Change: events.DynamoDBStreamRecord{
			ApproximateCreationDateTime: events.SecondsEpochTime{Time: time.Unix(at.Unix(), 0)},
			Keys:                        image(ch.Keys),
			SequenceNumber:              sn,
			StreamViewType:              string(ch.StreamViewType),
		},
	}
	switch {
	case ch.OldImage == nil:
		r.EventName = string(events.DynamoDBOperationTypeInsert)
	case ch.NewImage == nil:
		r.EventName = string(events.DynamoDBOperationTypeRemove)
	default:
		r.EventName = string(events.DynamoDBOperationTypeModify)
	}
	size := itemSize(ch.Keys)
	view := ch.StreamViewType
	if view == ddbtypes.StreamViewTypeNewImage || view == ddbtypes.StreamViewTypeNewAndOldImages {
		r.Change.NewImage = image(ch.NewImage)
		size += itemSize(ch.NewImage)
	}
	if view == ddbtypes.StreamViewTypeOldImage || view == ddbtypes.StreamViewTypeNewAndOldImages {
		r.Change.OldImage = image(ch.OldImage)
		size += itemSize(ch.OldImage)
	}
	r.Change.SizeBytes = max(size, 1)
	if ch.Expired {
		identity := TTLIdentity
		r.UserIdentity = &identity
	}
	return r
}

func image(item map[string]ddbtypes.AttributeValue) map[string]events.DynamoDBAttributeValue {
	if item == nil {
		return nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(item))
	for k, v := range item {
		out[k] = attribute(v)
	}
	return out
}

func attribute(v ddbtypes.AttributeValue) events.DynamoDBAttributeValue {
	switch v := v.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value)
	case *ddbtypes.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value)
	case *ddbtypes.AttributeValueMemberB:
		return events.NewBinaryAttribute(v.Value)
	case *ddbtypes.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(v.Value)
	case *ddbtypes.AttributeValueMemberSS:
		return events.NewStringSetAttribute(v.Value)
	case *ddbtypes.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(v.Value)
	case *ddbtypes.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(v.Value)
	case *ddbtypes.AttributeValueMemberL:
		l := make([]events.DynamoDBAttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = attribute(e)
		}
		return events.NewListAttribute(l)
	case *ddbtypes.AttributeValueMemberM:
		return events.NewMapAttribute(image(v.Value))
	default:
		return events.NewNullAttribute()
	}
}

// itemSize is an item's size by DynamoDB's rules: names and values in
// bytes, a number one byte per two significant digits plus one, lists and
// maps three bytes plus one per element.
func itemSize(item map[string]ddbtypes.AttributeValue) int64 {
	var n int64
	for k, v := range item {
		n += int64(len(k)) + valueSize(v)
	}
	return n
}

func valueSize(v ddbtypes.AttributeValue) int64 {
	switch v := v.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return int64(len(v.Value))
	case *ddbtypes.AttributeValueMemberN:
		return numberSize(v.Value)
	case *ddbtypes.AttributeValueMemberB:
		return int64(len(v.Value))
	case *ddbtypes.AttributeValueMemberSS:
		var n int64
		for _, s := range v.Value {
			n += int64(len(s))
		}
		return n
	case *ddbtypes.AttributeValueMemberNS:
		var n int64
		for _, s := range v.Value {
			n += numberSize(s)
		}
		return n
	case *ddbtypes.AttributeValueMemberBS:
		var n int64
		for _, b := range v.Value {
			n += int64(len(b))
		}
		return n
	case *ddbtypes.AttributeValueMemberL:
		n := int64(3)
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *ddbtypes.AttributeValueMemberM:
		n := int64(3)
		for k, e := range v.Value {
			n += 1 + int64(len(k)) + valueSize(e)
		}
		return n
	default: // BOOL, NULL
		return 1
	}
}

// numberSize counts significant digits: leading and trailing zeros, the
// sign, the point and an exponent do not count.
func numberSize(s string) int64 {
	mantissa, _, _ := strings.Cut(strings.ToLower(s), "e")
	digits := strings.Map(func(r rune) rune {
		if r < '0' || r > '9' {
			return -1
		}
		return r
	}, mantissa)
	digits = strings.Trim(digits, "0")
	return int64((len(digits)+1)/2 + 1)
}
