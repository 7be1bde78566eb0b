package dynamodblocal

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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

// recordJSON is the stream record of one change as Lambda passes it to a
// function (events.DynamoDBEventRecord's JSON): the images the view type
// asks for, the time rounded down to the second.
func recordJSON(ch server.ItemChange, seq uint64, at time.Time) []byte {
	sn := sequenceNumber(seq)
	id := sha256.Sum256([]byte(ch.StreamARN + "/" + sn))
	name := events.DynamoDBOperationTypeModify
	switch {
	case ch.OldImage == nil:
		name = events.DynamoDBOperationTypeInsert
	case ch.NewImage == nil:
		name = events.DynamoDBOperationTypeRemove
	}
	view := ch.StreamViewType
	f := recordFields{
		region: Region, arn: ch.StreamARN, eventHash: id, name: string(name),
		view: string(view), sn: sn, created: at.Unix(), keys: ch.Keys, size: ItemSize(ch.Keys),
	}
	if view == ddbtypes.StreamViewTypeNewImage || view == ddbtypes.StreamViewTypeNewAndOldImages {
		f.newImage = ch.NewImage
		f.size += ItemSize(ch.NewImage)
	}
	if view == ddbtypes.StreamViewTypeOldImage || view == ddbtypes.StreamViewTypeNewAndOldImages {
		f.oldImage = ch.OldImage
		f.size += ItemSize(ch.OldImage)
	}
	if ch.Expired {
		f.identity = &TTLIdentity
	}
	return f.json()
}

// recordFields are a stream record's fields, as Lambda passes them.
type recordFields struct {
	region, arn, eventID, name, view, sn string
	eventHash                            [sha256.Size]byte // the eventID's 16 bytes, in hex, when eventID is ""
	created                              int64             // epoch seconds
	keys, newImage, oldImage             map[string]ddbtypes.AttributeValue
	size                                 int64
	identity                             *events.DynamoDBUserIdentity
}

// json writes the record as events.DynamoDBEventRecord's JSON, directly,
// not through the events types and encoding/json, which cost a third of a
// turn's allocations in this process.
func (f *recordFields) json() []byte {
	b := make([]byte, 0, 1024)
	b = append(b, `{"awsRegion":`...)
	b = appendString(b, f.region)
	b = append(b, `,"dynamodb":{"ApproximateCreationDateTime":`...)
	b = strconv.AppendInt(b, f.created, 10)
	b = append(b, `,"Keys":`...)
	b = appendItem(b, f.keys)
	if f.newImage != nil {
		b = append(b, `,"NewImage":`...)
		b = appendItem(b, f.newImage)
	}
	if f.oldImage != nil {
		b = append(b, `,"OldImage":`...)
		b = appendItem(b, f.oldImage)
	}
	b = append(b, `,"SequenceNumber":`...)
	b = appendString(b, f.sn)
	b = append(b, `,"SizeBytes":`...)
	b = strconv.AppendInt(b, max(f.size, 1), 10)
	b = append(b, `,"StreamViewType":`...)
	b = appendString(b, f.view)
	if f.eventID != "" {
		b = append(b, `},"eventID":`...)
		b = appendString(b, f.eventID)
	} else {
		b = append(b, `},"eventID":"`...)
		b = hex.AppendEncode(b, f.eventHash[:16])
		b = append(b, '"')
	}
	b = append(b, `,"eventName":`...)
	b = appendString(b, f.name)
	b = append(b, `,"eventSource":"aws:dynamodb","eventVersion":"1.1","eventSourceARN":`...)
	b = appendString(b, f.arn)
	if f.identity != nil {
		b = append(b, `,"userIdentity":{"type":`...)
		b = appendString(b, f.identity.Type)
		b = append(b, `,"principalId":`...)
		b = appendString(b, f.identity.PrincipalID)
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendItem writes an item as DynamoDB JSON ({"name":{"S":"v"},...}).
func appendItem(b []byte, item map[string]ddbtypes.AttributeValue) []byte {
	b = append(b, '{')
	first := true
	for k, v := range item {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendString(b, k)
		b = append(b, ':')
		b = appendValue(b, v)
	}
	return append(b, '}')
}

func appendValue(b []byte, v ddbtypes.AttributeValue) []byte {
	switch v := v.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return append(appendString(append(b, `{"S":`...), v.Value), '}')
	case *ddbtypes.AttributeValueMemberN:
		return append(appendString(append(b, `{"N":`...), v.Value), '}')
	case *ddbtypes.AttributeValueMemberB:
		return append(base64.StdEncoding.AppendEncode(append(b, `{"B":"`...), v.Value), `"}`...)
	case *ddbtypes.AttributeValueMemberBOOL:
		return append(strconv.AppendBool(append(b, `{"BOOL":`...), v.Value), '}')
	case *ddbtypes.AttributeValueMemberSS:
		return appendList(b, "SS", v.Value, appendString)
	case *ddbtypes.AttributeValueMemberNS:
		return appendList(b, "NS", v.Value, appendString)
	case *ddbtypes.AttributeValueMemberBS:
		return appendList(b, "BS", v.Value, func(b, v []byte) []byte {
			return append(base64.StdEncoding.AppendEncode(append(b, '"'), v), '"')
		})
	case *ddbtypes.AttributeValueMemberL:
		return appendList(b, "L", v.Value, appendValue)
	case *ddbtypes.AttributeValueMemberM:
		return append(appendItem(append(b, `{"M":`...), v.Value), '}')
	default:
		return append(b, `{"NULL":true}`...)
	}
}

func appendList[T any](b []byte, typ string, list []T, each func([]byte, T) []byte) []byte {
	b = append(append(append(b, `{"`...), typ...), `":[`...)
	for i, v := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = each(b, v)
	}
	return append(b, "]}"...)
}

// appendString writes s as a JSON string, invalid UTF-8 as U+FFFD (as
// encoding/json does).
func appendString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}

// ItemSize is an item's size by DynamoDB's rules: names and values in
// bytes, a number one byte per two significant digits plus one, lists and
// maps three bytes plus one per element. The stream records' SizeBytes,
// and the write units the load run and the report's estimate count.
func ItemSize(item map[string]ddbtypes.AttributeValue) int64 {
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
		return sum(v.Value, func(s string) int64 { return int64(len(s)) })
	case *ddbtypes.AttributeValueMemberNS:
		return sum(v.Value, numberSize)
	case *ddbtypes.AttributeValueMemberBS:
		return sum(v.Value, func(b []byte) int64 { return int64(len(b)) })
	case *ddbtypes.AttributeValueMemberL:
		return 3 + sum(v.Value, func(e ddbtypes.AttributeValue) int64 { return 1 + valueSize(e) })
	case *ddbtypes.AttributeValueMemberM:
		return 3 + int64(len(v.Value)) + ItemSize(v.Value)
	default: // BOOL, NULL
		return 1
	}
}

func sum[T any](list []T, size func(T) int64) int64 {
	var n int64
	for _, v := range list {
		n += size(v)
	}
	return n
}

// numberSize counts significant digits: leading and trailing zeros, the
// sign, the point and an exponent do not count.
func numberSize(s string) int64 {
	mantissa, _, _ := strings.Cut(s, "e")
	mantissa, _, _ = strings.Cut(mantissa, "E")
	start, end := 0, len(mantissa)
	for start < end && (mantissa[start] < '1' || mantissa[start] > '9') {
		start++
	}
	for end > start && (mantissa[end-1] < '1' || mantissa[end-1] > '9') {
		end--
	}
	digits := 0
	for i := start; i < end; i++ {
		if mantissa[i] >= '0' && mantissa[i] <= '9' {
			digits++
		}
	}
	return int64((digits+1)/2 + 1)
}
