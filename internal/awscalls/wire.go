package awscalls

import (
	"encoding/json"
	"strings"
)

// wireInput is the JSON body of the JSON-protocol operations FromInput
// reads (DynamoDB, EventBridge, Secrets Manager), as the SDK sends it.
type wireInput struct {
	TableName     string
	IndexName     string
	Key, Item     wireItem
	TransactItems []struct {
		Put, Update, Delete, ConditionCheck, Get *struct {
			TableName string
			Key, Item wireItem
		}
	}
	RequestItems map[string]json.RawMessage
	// A Query's key condition.
	KeyConditionExpression    string
	ExpressionAttributeNames  map[string]string
	ExpressionAttributeValues wireItem
	SecretID                  string `json:"SecretId"`
	Entries                   []struct{ EventBusName string }
}

// wireItem is an item or key in DynamoDB's JSON: {"pk":{"S":"USER#u1"}}.
type wireItem map[string]struct{ S *string }

func (w wireItem) key() string {
	if v, ok := w[partitionKey]; ok && v.S != nil {
		return KeyPrefix(*v.S)
	}
	return ""
}

// FromJSON is the call a JSON-protocol request makes: service is the IAM
// prefix, target the X-Amz-Target header ("DynamoDB_20120810.GetItem"),
// body the request's JSON. A body that does not parse records service
// and operation only.
func FromJSON(service, target string, body []byte) Call {
	_, op, _ := strings.Cut(target, ".")
	c := Call{Service: service, Operation: op}
	var in wireInput
	if json.Unmarshal(body, &in) != nil {
		return c
	}
	switch op {
	case "GetItem", "UpdateItem", "DeleteItem":
		c.Table, c.Key = in.TableName, in.Key.key()
	case "PutItem":
		c.Table, c.Key = in.TableName, in.Item.key()
	case "Query", "Scan":
		c.Table, c.Index = in.TableName, in.IndexName
		if op == "Query" {
			c.Key = queryKey(in.KeyConditionExpression, in.ExpressionAttributeNames, func(v string) (string, bool) {
				if av, ok := in.ExpressionAttributeValues[v]; ok && av.S != nil {
					return *av.S, true
				}
				return "", false
			})
		}
	case "DescribeTable", "CreateTable":
		c.Table = in.TableName
	case "TransactWriteItems", "TransactGetItems":
		for _, it := range in.TransactItems {
			for _, p := range []struct {
				kind string
				part *struct {
					TableName string
					Key, Item wireItem
				}
			}{{"Put", it.Put}, {"Update", it.Update}, {"Delete", it.Delete}, {"ConditionCheck", it.ConditionCheck}, {"Get", it.Get}} {
				if p.part == nil {
					continue
				}
				k := p.part.Key.key()
				if p.kind == "Put" {
					k = p.part.Item.key()
				}
				c.Items = append(c.Items, Item{p.part.TableName, p.kind, k})
			}
		}
	case "BatchGetItem":
		for table, raw := range in.RequestItems {
			var ka struct{ Keys []wireItem }
			_ = json.Unmarshal(raw, &ka)
			for _, k := range ka.Keys {
				c.Items = append(c.Items, Item{table, "Get", k.key()})
			}
		}
	case "BatchWriteItem":
		for table, raw := range in.RequestItems {
			var reqs []struct {
				PutRequest    *struct{ Item wireItem }
				DeleteRequest *struct{ Key wireItem }
			}
			_ = json.Unmarshal(raw, &reqs)
			for _, w := range reqs {
				switch {
				case w.PutRequest != nil:
					c.Items = append(c.Items, Item{table, "Put", w.PutRequest.Item.key()})
				case w.DeleteRequest != nil:
					c.Items = append(c.Items, Item{table, "Delete", w.DeleteRequest.Key.key()})
				}
			}
		}
	case "GetSecretValue":
		c.Resource = in.SecretID
	case "PutEvents":
		names := make([]string, len(in.Entries))
		for i, e := range in.Entries {
			names[i] = e.EventBusName
		}
		c.Resource = buses(names)
	}
	return c.normalize()
}
