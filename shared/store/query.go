package store

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// queryPages runs in page after page (its ExclusiveStartKey and Limit
// are the pager's), handing each item to each, until limit items were
// handed (0: no limit) or the Query's end. Each page asks for at most
// what is still wanted and at most page items (0: no bound). Limit counts
// the items read before a filter, so a filtered Query may need more pages
// than limit / page. Items handed before an error stay handed.
//
// Not dynamodb.NewQueryPaginator: its page bound is fixed for every page
// (QueryPaginatorOptions.Limit replaces the input's Limit), while each
// page here asks for no more than is still wanted, so a bounded read
// never reads, and pays for, items it would not hand.
func (d *Dynamo) queryPages(ctx context.Context, in *dynamodb.QueryInput, limit, page int, each func(map[string]types.AttributeValue) error) error {
	n := 0
	for {
		want := page
		if limit > 0 && (want == 0 || limit-n < want) {
			want = limit - n
		}
		if want > 0 {
			in.Limit = aws.Int32(int32(want))
		}
		out, err := d.db.Query(ctx, in)
		if err != nil {
			return err
		}
		for _, item := range out.Items {
			if err := each(item); err != nil {
				return err
			}
			n++
		}
		if len(out.LastEvaluatedKey) == 0 || (limit > 0 && n >= limit) {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}
