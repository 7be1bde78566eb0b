package server

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/truora/minidyn/types"
)

// UpdateTimeToLiveInput mirrors DynamoDB UpdateTimeToLiveInput.
type UpdateTimeToLiveInput struct {
	TableName               *string                           `json:"TableName,omitempty"`
	TimeToLiveSpecification *ddbtypes.TimeToLiveSpecification `json:"TimeToLiveSpecification,omitempty"`
}

// UpdateTimeToLiveOutput mirrors DynamoDB UpdateTimeToLiveOutput.
type UpdateTimeToLiveOutput struct {
	TimeToLiveSpecification *ddbtypes.TimeToLiveSpecification `json:"TimeToLiveSpecification,omitempty"`
}

// DescribeTimeToLiveInput mirrors DynamoDB DescribeTimeToLiveInput.
type DescribeTimeToLiveInput struct {
	TableName *string `json:"TableName,omitempty"`
}

// DescribeTimeToLiveOutput mirrors DynamoDB DescribeTimeToLiveOutput.
type DescribeTimeToLiveOutput struct {
	TimeToLiveDescription *ttlDescription `json:"TimeToLiveDescription,omitempty"`
}

type ttlDescription struct {
	TimeToLiveStatus ddbtypes.TimeToLiveStatus `json:"TimeToLiveStatus"`
	AttributeName    string                    `json:"AttributeName,omitempty"`
}

func validationError(msg string) error {
	return &smithy.GenericAPIError{Code: "ValidationException", Message: msg}
}

// UpdateTimeToLive enables or disables Time to Live on a table. Unlike
// DynamoDB the change is immediate (no ENABLING state, no one-hour wait).
func (c *Client) UpdateTimeToLive(_ context.Context, input *UpdateTimeToLiveInput) (*UpdateTimeToLiveOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()

	spec := input.TimeToLiveSpecification
	if spec == nil || spec.Enabled == nil || aws.ToString(spec.AttributeName) == "" {
		return nil, validationError("TimeToLiveSpecification needs AttributeName and Enabled")
	}

	if _, err := c.getTable(aws.ToString(input.TableName)); err != nil {
		return nil, err
	}

	m := c.meta[aws.ToString(input.TableName)]
	name := aws.ToString(spec.AttributeName)

	switch {
	case *spec.Enabled && m.ttlAttribute != "":
		return nil, validationError("TimeToLive is already enabled")
	case !*spec.Enabled && m.ttlAttribute == "":
		return nil, validationError("TimeToLive is already disabled")
	case !*spec.Enabled && m.ttlAttribute != name:
		return nil, validationError("The TimeToLive attribute name does not match the enabled one")
	case *spec.Enabled:
		m.ttlAttribute = name
	default:
		m.ttlAttribute = ""
	}

	return &UpdateTimeToLiveOutput{TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{
		AttributeName: aws.String(name), Enabled: aws.Bool(*spec.Enabled),
	}}, nil
}

// DescribeTimeToLive returns a table's Time to Live status and attribute.
func (c *Client) DescribeTimeToLive(_ context.Context, input *DescribeTimeToLiveInput) (*DescribeTimeToLiveOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()

	if _, err := c.getTable(aws.ToString(input.TableName)); err != nil {
		return nil, err
	}

	desc := &ttlDescription{TimeToLiveStatus: ddbtypes.TimeToLiveStatusDisabled}
	if attr := c.meta[aws.ToString(input.TableName)].ttlAttribute; attr != "" {
		desc = &ttlDescription{TimeToLiveStatus: ddbtypes.TimeToLiveStatusEnabled, AttributeName: attr}
	}

	return &DescribeTimeToLiveOutput{TimeToLiveDescription: desc}, nil
}

// ExpireItems does what DynamoDB's background Time to Live process does, at
// once: in every table with TTL enabled it deletes the items whose TTL
// attribute is a Number of epoch seconds before now and not more than five
// years before it (other values are ignored). The change listener sees
// each deletion with Expired set. It returns how many items it deleted.
func (c *Client) ExpireItems(now time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()

	deleted := 0

	for _, name := range slices.Sorted(maps.Keys(c.meta)) {
		attr, table := c.meta[name].ttlAttribute, c.tables[name]
		if attr == "" || table == nil {
			continue
		}

		var keys []string

		for key, item := range table.Data {
			if expired(item[attr], now) {
				keys = append(keys, key)
			}
		}

		slices.Sort(keys)

		for _, key := range keys {
			t := touch(table, key)
			if err := table.RestoreItem(key, nil); err != nil {
				continue
			}

			deleted++

			c.publish(true, t)
		}
	}

	return deleted
}

func expired(v *types.Item, now time.Time) bool {
	if v == nil || v.N == nil {
		return false
	}

	at, err := strconv.ParseFloat(*v.N, 64)
	if err != nil {
		return false
	}

	nowSeconds := float64(now.UnixNano()) / 1e9

	return at < nowSeconds && at >= float64(now.AddDate(-5, 0, 0).Unix())
}
