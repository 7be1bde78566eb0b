package awscalls

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// FromInput is the call an SDK client makes with input (its typed
// *XxxInput) to the service with that SDK service id. Inputs of
// operations the runtime does not call record service and operation only.
func FromInput(serviceID, operation string, input any) Call {
	c := Call{Service: ServicePrefix(serviceID), Operation: operation}
	switch in := input.(type) {
	case *dynamodb.GetItemInput:
		c.Table, c.Key = aws.ToString(in.TableName), keyOf(in.Key)
	case *dynamodb.PutItemInput:
		c.Table, c.Key = aws.ToString(in.TableName), keyOf(in.Item)
	case *dynamodb.UpdateItemInput:
		c.Table, c.Key = aws.ToString(in.TableName), keyOf(in.Key)
	case *dynamodb.DeleteItemInput:
		c.Table, c.Key = aws.ToString(in.TableName), keyOf(in.Key)
	case *dynamodb.QueryInput:
		c.Table, c.Index = aws.ToString(in.TableName), aws.ToString(in.IndexName)
		c.Key = queryKey(aws.ToString(in.KeyConditionExpression), in.ExpressionAttributeNames, func(v string) (string, bool) {
			s, ok := in.ExpressionAttributeValues[v].(*types.AttributeValueMemberS)
			if !ok {
				return "", false
			}
			return s.Value, true
		})
	case *dynamodb.ScanInput:
		c.Table, c.Index = aws.ToString(in.TableName), aws.ToString(in.IndexName)
	case *dynamodb.DescribeTableInput:
		c.Table = aws.ToString(in.TableName)
	case *dynamodb.CreateTableInput:
		c.Table = aws.ToString(in.TableName)
	case *dynamodb.TransactWriteItemsInput:
		for _, it := range in.TransactItems {
			switch {
			case it.Put != nil:
				c.Items = append(c.Items, Item{aws.ToString(it.Put.TableName), "Put", keyOf(it.Put.Item)})
			case it.Update != nil:
				c.Items = append(c.Items, Item{aws.ToString(it.Update.TableName), "Update", keyOf(it.Update.Key)})
			case it.Delete != nil:
				c.Items = append(c.Items, Item{aws.ToString(it.Delete.TableName), "Delete", keyOf(it.Delete.Key)})
			case it.ConditionCheck != nil:
				c.Items = append(c.Items, Item{aws.ToString(it.ConditionCheck.TableName), "ConditionCheck", keyOf(it.ConditionCheck.Key)})
			}
		}
	case *dynamodb.TransactGetItemsInput:
		for _, it := range in.TransactItems {
			if it.Get != nil {
				c.Items = append(c.Items, Item{aws.ToString(it.Get.TableName), "Get", keyOf(it.Get.Key)})
			}
		}
	case *dynamodb.BatchGetItemInput:
		for table, ka := range in.RequestItems {
			for _, k := range ka.Keys {
				c.Items = append(c.Items, Item{table, "Get", keyOf(k)})
			}
		}
	case *dynamodb.BatchWriteItemInput:
		for table, reqs := range in.RequestItems {
			for _, w := range reqs {
				switch {
				case w.PutRequest != nil:
					c.Items = append(c.Items, Item{table, "Put", keyOf(w.PutRequest.Item)})
				case w.DeleteRequest != nil:
					c.Items = append(c.Items, Item{table, "Delete", keyOf(w.DeleteRequest.Key)})
				}
			}
		}
	case *lambda.InvokeInput:
		c.Resource = aws.ToString(in.FunctionName)
	case *secretsmanager.GetSecretValueInput:
		c.Resource = aws.ToString(in.SecretId)
	case *eventbridge.PutEventsInput:
		names := make([]string, len(in.Entries))
		for i, e := range in.Entries {
			names[i] = aws.ToString(e.EventBusName)
		}
		c.Resource = buses(names)
	}
	return c.normalize()
}

// keyOf is the KeyPrefix of an item's or key's partition key.
func keyOf(item map[string]types.AttributeValue) string {
	if s, ok := item[partitionKey].(*types.AttributeValueMemberS); ok {
		return KeyPrefix(s.Value)
	}
	return ""
}
