package console

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/tablekeys"
	"github.com/commonly/runtime/shared/utcday"
)

// installRef is an install as the state table names it; the page reads
// the install itself through the API.
type installRef struct {
	InstallID string `json:"installId"`
	UserID    string `json:"userId"`
}

// stack answers what no route of the API lists: the installs and the
// users (anyone with an install, a plan or usage today), and the
// stack's settings the page shows beside them.
func (c *Console) stack(w http.ResponseWriter, r *http.Request) {
	installs, users, err := c.list(r.Context())
	if err != nil {
		http.Error(w, "could not read the state table: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, map[string]any{
		"installs": installs, "users": users,
		"alarmMicros": int64(c.cfg.Alarm), "traces": c.cfg.TracesFile != "",
	})
}

// list scans the state table for installs and users (an install's
// owner, a plan's, a day's usage's today), sorted by id.
func (c *Console) list(ctx context.Context) ([]installRef, []string, error) {
	today := utcday.Of(c.cfg.Now())
	installs := []installRef{}
	seen := map[string]bool{}
	in := &dynamodb.ScanInput{
		TableName:                aws.String(c.cfg.StateTable),
		ProjectionExpression:     aws.String("#pk, #sk, userId"),
		ExpressionAttributeNames: map[string]string{"#pk": tablekeys.PK, "#sk": tablekeys.SK},
	}
	for {
		out, err := c.cfg.DB.Scan(ctx, in)
		if err != nil {
			return nil, nil, fmt.Errorf("scan %s: %w", c.cfg.StateTable, err)
		}
		for _, item := range out.Items {
			k := tablekeys.Key{PK: str(item[tablekeys.PK]), SK: str(item[tablekeys.SK])}
			_, id, _ := strings.Cut(k.PK, "#")
			user := id
			switch k {
			case tablekeys.Install(id):
				user = str(item["userId"])
				installs = append(installs, installRef{InstallID: id, UserID: user})
			case tablekeys.Plan(id), tablekeys.UsageOnDay(id, today):
			default:
				continue
			}
			if tablekeys.ValidID(user) {
				seen[user] = true
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	slices.SortFunc(installs, func(a, b installRef) int { return strings.Compare(a.InstallID, b.InstallID) })
	users := make([]string, 0, len(seen))
	for u := range seen {
		users = append(users, u)
	}
	slices.Sort(users)
	return installs, users, nil
}

func str(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}
