package dynamodblocal

import (
	"context"
	"encoding/base64"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ttlMaxAge is how old a TTL value may be and still count: DynamoDB
// ignores values more than five years in the past.
const ttlMaxAge = 5 * 365 * 24 * time.Hour

// ttlMark is one of the sweep's deletes: the item's TTL attribute and
// value, by which its REMOVE stream record is known.
type ttlMark struct{ attr, value string }

// expire is the Time to Live process DynamoDB Local does not run: in each
// table with TTL on, every item whose TTL attribute is a Number of epoch
// seconds before now (and not more than five years before) is deleted,
// on the condition that its TTL is still the one read, and marked as the
// sweep's. It returns how many it deleted; errors are logged, and the next
// sweep tries again.
func (r *reference) expire(ctx context.Context, now time.Time) int {
	deleted := 0
	p := dynamodb.NewListTablesPaginator(r.db, &dynamodb.ListTablesInput{})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			r.log.Warn("reference dynamodb: TTL sweep: list tables", "error", err)
			return deleted
		}
		for _, table := range page.TableNames {
			n, err := r.expireTable(ctx, table, now)
			deleted += n
			if err != nil {
				r.log.Warn("reference dynamodb: TTL sweep", "table", table, "error", err)
			}
		}
	}
	return deleted
}

func (r *reference) expireTable(ctx context.Context, table string, now time.Time) (int, error) {
	ttl, err := r.db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		return 0, err
	}
	d := ttl.TimeToLiveDescription
	if d == nil || d.TimeToLiveStatus != types.TimeToLiveStatusEnabled {
		return 0, nil
	}
	attr := aws.ToString(d.AttributeName)
	desc, err := r.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return 0, err
	}
	names := map[string]string{"#t": attr}
	projection := []string{"#t"}
	for i, k := range desc.Table.KeySchema {
		alias := "#k" + strconv.Itoa(i)
		names[alias] = aws.ToString(k.AttributeName)
		projection = append(projection, alias)
	}
	epoch := func(t time.Time) types.AttributeValue {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.Unix(), 10)}
	}
	scan := dynamodb.NewScanPaginator(r.db, &dynamodb.ScanInput{
		TableName:                 aws.String(table),
		ConsistentRead:            aws.Bool(true),
		FilterExpression:          aws.String("#t < :now AND #t >= :oldest"),
		ProjectionExpression:      aws.String(strings.Join(projection, ", ")),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": epoch(now), ":oldest": epoch(now.Add(-ttlMaxAge))},
	})
	deleted := 0
	for scan.HasMorePages() {
		page, err := scan.NextPage(ctx)
		if err != nil {
			return deleted, err
		}
		for _, item := range page.Items {
			value := item[attr]
			delete(item, attr)
			ok, err := r.deleteExpired(ctx, table, item, attr, value)
			if err != nil {
				return deleted, err
			}
			if ok {
				deleted++
			}
		}
	}
	return deleted, nil
}

// deleteExpired deletes the item of key if its TTL attribute still holds
// value, marked first so that the poller cannot see its record unmarked.
func (r *reference) deleteExpired(ctx context.Context, table string, key map[string]types.AttributeValue, attr string, value types.AttributeValue) (bool, error) {
	n, _ := value.(*types.AttributeValueMemberN)
	if n == nil {
		return false, nil
	}
	mark := markKey(table, key)
	r.mu.Lock()
	r.marks[mark] = ttlMark{attr: attr, value: n.Value}
	r.mu.Unlock()
	_, err := r.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(table), Key: key,
		ConditionExpression:       aws.String("#t = :v"),
		ExpressionAttributeNames:  map[string]string{"#t": attr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": value},
	})
	if err == nil {
		return true, nil
	}
	r.mu.Lock()
	delete(r.marks, mark)
	r.mu.Unlock()
	if ccf := (*types.ConditionalCheckFailedException)(nil); errors.As(err, &ccf) {
		return false, nil // written or deleted since the scan: not expired now
	}
	return false, err
}

// expiredBySweep reports whether a REMOVE record of table with keys and
// old image (nil when the view has none) is one of the sweep's deletes.
func (r *reference) expiredBySweep(table string, keys, old map[string]types.AttributeValue) bool {
	r.mu.Lock()
	m, ok := r.marks[markKey(table, keys)]
	r.mu.Unlock()
	if !ok {
		return false
	}
	if old == nil {
		return true
	}
	n, _ := old[m.attr].(*types.AttributeValueMemberN)
	return n != nil && n.Value == m.value
}

// markKey identifies an item: its table and key attributes in name order.
func markKey(table string, key map[string]types.AttributeValue) string {
	var b strings.Builder
	b.WriteString(table)
	for _, name := range slices.Sorted(maps.Keys(key)) {
		b.WriteString("\x00" + name + "\x00")
		switch v := key[name].(type) {
		case *types.AttributeValueMemberS:
			b.WriteString("S" + v.Value)
		case *types.AttributeValueMemberN:
			b.WriteString("N" + v.Value)
		case *types.AttributeValueMemberB:
			b.WriteString("B" + base64.StdEncoding.EncodeToString(v.Value))
		}
	}
	return b.String()
}
