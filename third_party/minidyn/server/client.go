package server

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/truora/minidyn/core"
	"github.com/truora/minidyn/interpreter"
	"github.com/truora/minidyn/types"
)

// Client implements a DynamoDB-like engine backed by core.Table.
type Client struct {
	tables               map[string]*core.Table
	mu                   sync.Mutex
	langInterpreter      *interpreter.Language
	nativeInterpreter    *interpreter.Native
	useNativeInterpreter bool
	forceFailureErr      error
	tableFailureErrs     map[string]error
	unprocessedMatchers  map[string]func(int, map[string]*AttributeValue) bool
	indexActivationDelay time.Duration
	meta                 map[string]*tableMeta // by table name: stream and TTL
	onChange             func([]ItemChange)
	region, accountID    string // of stream ARNs
	now                  func() time.Time
	tokens               transactTokens // TransactWriteItems' ClientRequestTokens
}

// NewClient creates a new in-memory DynamoDB-compatible client used by the HTTP server.
func NewClient() *Client {
	return &Client{
		tables:              map[string]*core.Table{},
		mu:                  sync.Mutex{},
		nativeInterpreter:   interpreter.NewNativeInterpreter(),
		langInterpreter:     &interpreter.Language{},
		tableFailureErrs:    map[string]error{},
		unprocessedMatchers: map[string]func(int, map[string]*AttributeValue) bool{},
		meta:                map[string]*tableMeta{},
		region:              "ddblocal",
		accountID:           "000000000000",
		now:                 time.Now,
	}
}

func (c *Client) setFailureCondition(err error) {
	c.forceFailureErr = err
}

// failureKey builds the lookup key for a table-scoped failure. An empty index
// means the failure applies to the whole table.
func failureKey(table, index string) string {
	return table + "\x00" + index
}

// setTableFailureCondition scopes a failure to a table, or to a specific index of
// that table when index is not empty. A nil err clears that exact scope.
func (c *Client) setTableFailureCondition(table, index string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()

	key := failureKey(table, index)

	if err == nil {
		delete(c.tableFailureErrs, key)

		return
	}

	c.tableFailureErrs[key] = err
}

// failureErrFor resolves the emulated error for an operation targeting the given
// table and index. A global failure overrides everything; otherwise an
// index-scoped failure (when index is set) wins over a table-wide one. Callers
// must hold c.mu.
func (c *Client) failureErrFor(table, index string) error {
	if c.forceFailureErr != nil {
		return c.forceFailureErr
	}

	if index != "" {
		if err := c.tableFailureErrs[failureKey(table, index)]; err != nil {
			return err
		}
	}

	return c.tableFailureErrs[failureKey(table, "")]
}

// setUnprocessedMatcher installs a predicate that marks matching sub-requests of a
// batch operation on tableName as unprocessed. A nil match clears the predicate for
// that table.
func (c *Client) setUnprocessedMatcher(tableName string, match func(int, map[string]*AttributeValue) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()

	if match == nil {
		delete(c.unprocessedMatchers, tableName)

		return
	}

	c.unprocessedMatchers[tableName] = match
}

// clearUnprocessedMatchers removes every batch partial-failure predicate.
func (c *Client) clearUnprocessedMatchers() {
	c.mu.Lock()
	defer c.mu.Unlock()

	c.unprocessedMatchers = map[string]func(int, map[string]*AttributeValue) bool{}
}

// batchEmulation is a lock-free snapshot of the failure emulation that applies to a
// batch operation: a hard failure error (global or table-scoped) that fails the whole
// call, and the per-table partial-failure predicates.
type batchEmulation struct {
	failErr  error
	matchers map[string]func(int, map[string]*AttributeValue) bool
}

// unprocessed reports whether sub-request n (raw payload) of tableName should be
// returned as unprocessed instead of being executed.
func (e batchEmulation) unprocessed(tableName string, n int, raw map[string]*AttributeValue) bool {
	match, ok := e.matchers[tableName]

	return ok && match(n, raw)
}

// batchEmulationFor snapshots the emulation state relevant to a batch touching the
// given tables. A global failure overrides everything; otherwise any table-scoped
// failure hard-fails the whole batch. Takes c.mu briefly so the loop can run lock-free.
func (c *Client) batchEmulationFor(tables ...string) batchEmulation {
	c.mu.Lock()
	defer c.mu.Unlock()

	snap := batchEmulation{}

	if c.forceFailureErr != nil {
		snap.failErr = c.forceFailureErr

		return snap
	}

	for _, table := range tables {
		if err := c.failureErrFor(table, ""); err != nil {
			snap.failErr = err

			return snap
		}
	}

	for _, table := range tables {
		if match, ok := c.unprocessedMatchers[table]; ok {
			if snap.matchers == nil {
				snap.matchers = map[string]func(int, map[string]*AttributeValue) bool{}
			}

			snap.matchers[table] = match
		}
	}

	return snap
}

func (c *Client) setIndexActivationDelay(delay time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()

	c.indexActivationDelay = delay

	for _, table := range c.tables {
		table.IndexActivationDelay = delay
	}
}

// Table helpers
func (c *Client) getTable(tableName string) (*core.Table, error) {
	table, ok := c.tables[tableName]
	if !ok {
		return nil, &ddbtypes.ResourceNotFoundException{Message: aws.String("Cannot do operations on a non-existent table")}
	}

	return table, nil
}

// CreateTable creates a new table in the in-memory engine.
func (c *Client) CreateTable(ctx context.Context, input *CreateTableInput) (*CreateTableOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()

	if err := checkCreateTableNames(input); err != nil {
		return nil, err
	}

	tableName := aws.ToString(input.TableName)
	if _, ok := c.tables[tableName]; ok {
		return nil, &ddbtypes.ResourceInUseException{Message: aws.String("Cannot create preexisting table")}
	}

	table := core.NewTable(tableName)
	table.SetAttributeDefinition(mapAttributeDefinitions(input.AttributeDefinitions))
	table.BillingMode = toStringPtr(string(input.BillingMode))
	table.NativeInterpreter = *c.nativeInterpreter
	table.UseNativeInterpreter = c.useNativeInterpreter
	table.LangInterpreter = *c.langInterpreter
	table.IndexActivationDelay = c.indexActivationDelay

	if err := table.CreatePrimaryIndex(&types.CreateTableInput{
		KeySchema:             mapKeySchema(input.KeySchema),
		ProvisionedThroughput: mapProvisionedThroughput(input.ProvisionedThroughput),
	}); err != nil {
		return nil, mapKnownError(err)
	}

	if err := table.AddGlobalIndexes(mapGSI(input.GlobalSecondaryIndexes)); err != nil {
		return nil, mapKnownError(err)
	}

	if err := table.AddLocalIndexes(mapLSI(input.LocalSecondaryIndexes)); err != nil {
		return nil, mapKnownError(err)
	}

	m := &tableMeta{}
	if err := c.updateStream(tableName, m, input.StreamSpecification); err != nil {
		return nil, err
	}

	c.tables[tableName] = table
	c.meta[tableName] = m

	return &CreateTableOutput{TableDescription: c.describe(table)}, nil
}

// UpdateTable applies metadata changes, including GSI updates.
func (c *Client) UpdateTable(ctx context.Context, input *UpdateTableInput) (*UpdateTableOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()

	tableName := aws.ToString(input.TableName)

	table, ok := c.tables[tableName]
	if !ok {
		return nil, &ddbtypes.ResourceNotFoundException{Message: aws.String("Cannot do operations on a non-existent table")}
	}

	if input.AttributeDefinitions != nil {
		table.SetAttributeDefinition(mapAttributeDefinitions(input.AttributeDefinitions))
	}

	for _, change := range mapGSIUpdate(input.GlobalSecondaryIndexUpdates) {
		if err := table.ApplyIndexChange(change); err != nil {
			return &UpdateTableOutput{TableDescription: c.describe(table)}, mapKnownError(err)
		}
	}

	if input.StreamSpecification != nil {
		if err := c.updateStream(tableName, c.meta[tableName], input.StreamSpecification); err != nil {
			return nil, err
		}
	}

	return &UpdateTableOutput{TableDescription: c.describe(table)}, nil
}

// updateStream enables or disables the table's stream as spec says (nil: no stream).
func (c *Client) updateStream(tableName string, m *tableMeta, spec *ddbtypes.StreamSpecification) error {
	if spec == nil {
		return nil
	}

	if !aws.ToBool(spec.StreamEnabled) {
		if spec.StreamViewType != "" {
			return validationError("StreamViewType cannot be specified when the stream is disabled")
		}

		m.streamViewType = ""

		return nil
	}

	if !slices.Contains(spec.StreamViewType.Values(), spec.StreamViewType) {
		return validationError("StreamViewType must be one of " + strings.Join(streamViewTypes(), ", "))
	}

	if m.streamEnabled() {
		return &ddbtypes.ResourceInUseException{Message: aws.String("Table already has an enabled stream: " + m.streamARN)}
	}

	m.streamViewType = spec.StreamViewType
	m.streamLabel = time.Now().UTC().Format("2006-01-02T15:04:05.000")
	m.streamARN = "arn:aws:dynamodb:" + c.region + ":" + c.accountID + ":table/" + tableName + "/stream/" + m.streamLabel

	return nil
}

func streamViewTypes() []string {
	var out []string
	for _, v := range ddbtypes.StreamViewType("").Values() {
		out = append(out, string(v))
	}

	return out
}

// describe is the table's description with its stream.
func (c *Client) describe(table *core.Table) *ddbtypes.TableDescription {
	desc := mapTableDescriptionToDDB(table.Description(table.Name))

	if m := c.meta[table.Name]; m != nil && m.streamARN != "" {
		desc.LatestStreamArn, desc.LatestStreamLabel = aws.String(m.streamARN), aws.String(m.streamLabel)
		if m.streamEnabled() {
			desc.StreamSpecification = &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: m.streamViewType}
		}
	}

	return desc
}

// DeleteTable removes a table and its data.
func (c *Client) DeleteTable(ctx context.Context, input *DeleteTableInput) (*DeleteTableOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()

	tableName := aws.ToString(input.TableName)

	table, err := c.getTable(tableName)
	if err != nil {
		return nil, err
	}

	desc := c.describe(table)
	delete(c.tables, tableName)
	delete(c.meta, tableName)

	return &DeleteTableOutput{TableDescription: desc}, nil
}

// DescribeTable returns table metadata.
func (c *Client) DescribeTable(ctx context.Context, input *DescribeTableInput) (*DescribeTableOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()

	tableName := aws.ToString(input.TableName)

	table, err := c.getTable(tableName)
	if err != nil {
		return nil, err
	}

	return &DescribeTableOutput{Table: c.describe(table)}, nil
}

// ClearTable removes all data from a specific table, including its indexes.
func (c *Client) ClearTable(tableName string) error {
	table, err := c.getTable(tableName)
	if err != nil {
		return err
	}

	c.mu.Lock()
	defer c.mu.Unlock()

	table.Clear()

	for _, index := range table.Indexes {
		index.Clear()
	}

	return nil
}

// ClearAllTables removes all data from every table and its indexes.
func (c *Client) ClearAllTables() {
	c.mu.Lock()
	defer c.mu.Unlock()

	for _, table := range c.tables {
		table.Clear()

		for _, index := range table.Indexes {
			index.Clear()
		}
	}
}

// Reset removes all tables and their indexes from the in-memory client.
func (c *Client) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()

	for name := range c.tables {
		delete(c.tables, name)
	}

	clear(c.meta)
}

// PutItem inserts or replaces an item.
func (c *Client) PutItem(ctx context.Context, input *PutItemInput) (*PutItemOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()

	if ferr := c.failureErrFor(aws.ToString(input.TableName), ""); ferr != nil {
		return nil, ferr
	}

	if err := validateExpressionAttributes(
		input.ExpressionAttributeNames,
		keysFromAttributeValueMap(input.ExpressionAttributeValues),
		aws.ToString(input.ConditionExpression),
	); err != nil {
		return nil, err
	}

	if err := checkReservedWords(expression{"ConditionExpression", aws.ToString(input.ConditionExpression)}); err != nil {
		return nil, err
	}

	table, err := c.getTable(aws.ToString(input.TableName))
	if err != nil {
		return nil, err
	}

	watched, watching := c.watch(table, input.Item)

	item, err := table.Put(&types.PutItemInput{
		TableName:                   input.TableName,
		ConditionExpression:         input.ConditionExpression,
		ConditionalOperator:         toStringPtr(string(input.ConditionalOperator)),
		ExpressionAttributeNames:    input.ExpressionAttributeNames,
		ExpressionAttributeValues:   mapAttributeValueMapToTypes(input.ExpressionAttributeValues),
		Item:                        mapAttributeValueMapToTypes(input.Item),
		ReturnConsumedCapacity:      toStringPtr(string(input.ReturnConsumedCapacity)),
		ReturnItemCollectionMetrics: toStringPtr(string(input.ReturnItemCollectionMetrics)),
		ReturnValues:                toStringPtr(string(input.ReturnValues)),
	})
	if err != nil {
		return nil, mapKnownError(err)
	}

	if watching {
		c.publish(false, watched)
	}

	return &PutItemOutput{Attributes: mapTypesMapToAttributeValue(item)}, nil
}

// DeleteItem removes an item and optionally returns old values.
func (c *Client) DeleteItem(ctx context.Context, input *DeleteItemInput) (*DeleteItemOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()

	if ferr := c.failureErrFor(aws.ToString(input.TableName), ""); ferr != nil {
		return nil, ferr
	}

	if err := validateExpressionAttributes(
		input.ExpressionAttributeNames,
		keysFromAttributeValueMap(input.ExpressionAttributeValues),
		aws.ToString(input.ConditionExpression),
	); err != nil {
		return nil, err
	}

	if err := checkReservedWords(expression{"ConditionExpression", aws.ToString(input.ConditionExpression)}); err != nil {
		return nil, err
	}

	table, err := c.getTable(aws.ToString(input.TableName))
	if err != nil {
		return nil, err
	}

	watched, watching := c.watch(table, input.Key)

	item, err := table.Delete(&types.DeleteItemInput{
		TableName:                 input.TableName,
		ConditionExpression:       input.ConditionExpression,
		ConditionalOperator:       toStringPtr(string(input.ConditionalOperator)),
		ExpressionAttributeNames:  toStringPtrMap(input.ExpressionAttributeNames),
		ExpressionAttributeValues: mapAttributeValueMapToTypes(input.ExpressionAttributeValues),
		Key:                       mapAttributeValueMapToTypes(input.Key),
	})
	if err != nil {
		return nil, mapKnownError(err)
	}

	if watching {
		c.publish(false, watched)
	}

	if input.ReturnValues == ddbtypes.ReturnValueAllOld {
		return &DeleteItemOutput{Attributes: mapTypesMapToAttributeValue(item)}, nil
	}

	return &DeleteItemOutput{}, nil
}

// UpdateItem modifies attributes of an item using an update expression.
func (c *Client) UpdateItem(ctx context.Context, input *UpdateItemInput) (*UpdateItemOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()

	if ferr := c.failureErrFor(aws.ToString(input.TableName), ""); ferr != nil {
		return nil, ferr
	}

	if err := validateExpressionAttributes(
		input.ExpressionAttributeNames,
		keysFromAttributeValueMap(input.ExpressionAttributeValues),
		aws.ToString(input.UpdateExpression),
		aws.ToString(input.ConditionExpression),
	); err != nil {
		return nil, err
	}

	if err := checkUpdateItemExpressions(aws.ToString(input.UpdateExpression), aws.ToString(input.ConditionExpression), input.ExpressionAttributeNames); err != nil {
		return nil, err
	}

	table, err := c.getTable(aws.ToString(input.TableName))
	if err != nil {
		return nil, err
	}

	watched, watching := c.watch(table, input.Key)

	item, err := table.Update(&types.UpdateItemInput{
		TableName:                           input.TableName,
		ConditionExpression:                 input.ConditionExpression,
		ConditionalOperator:                 toStringPtr(string(input.ConditionalOperator)),
		ExpressionAttributeNames:            input.ExpressionAttributeNames,
		ExpressionAttributeValues:           mapAttributeValueMapToTypes(input.ExpressionAttributeValues),
		Key:                                 mapAttributeValueMapToTypes(input.Key),
		UpdateExpression:                    aws.ToString(input.UpdateExpression),
		ReturnValues:                        toStringPtr(string(input.ReturnValues)),
		ReturnValuesOnConditionCheckFailure: toStringPtr(string(input.ReturnValuesOnConditionCheckFailure)),
	})
	if err != nil {
		return nil, mapKnownError(err)
	}

	if watching {
		c.publish(false, watched)
	}

	return &UpdateItemOutput{Attributes: mapTypesMapToAttributeValue(item)}, nil
}

// GetItem returns a single item by key.
func (c *Client) GetItem(ctx context.Context, input *GetItemInput) (*GetItemOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()

	if ferr := c.failureErrFor(aws.ToString(input.TableName), ""); ferr != nil {
		return nil, ferr
	}

	if err := validateExpressionAttributes(input.ExpressionAttributeNames, nil, aws.ToString(input.ProjectionExpression)); err != nil {
		return nil, err
	}

	if err := checkReservedWords(expression{"ProjectionExpression", aws.ToString(input.ProjectionExpression)}); err != nil {
		return nil, err
	}

	table, err := c.getTable(aws.ToString(input.TableName))
	if err != nil {
		return nil, err
	}

	keyMap := mapAttributeValueMapToTypes(input.Key)
	if vErr := types.ValidateItemMap(keyMap); vErr != nil {
		return nil, mapKnownError(types.NewError("ValidationException", vErr.Error(), nil))
	}

	if keyErr := table.ValidatePrimaryKeyMap(keyMap); keyErr != nil {
		return nil, &smithy.GenericAPIError{Code: "ValidationException", Message: keyErr.Error()}
	}

	key, err := table.KeySchema.GetKey(table.AttributesDef, keyMap)
	if err != nil {
		return nil, &smithy.GenericAPIError{Code: "ValidationException", Message: err.Error()}
	}

	stored := table.Data[key]

	item, err := getItemAttributesForOutput(table, stored, aws.ToString(input.ProjectionExpression), input.ExpressionAttributeNames)
	if err != nil {
		return nil, &smithy.GenericAPIError{Code: "ValidationException", Message: err.Error()}
	}

	return &GetItemOutput{Item: item}, nil
}

// Query searches items by key condition and optional filter.
func (c *Client) Query(ctx context.Context, input *QueryInput) (*QueryOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()

	if ferr := c.failureErrFor(aws.ToString(input.TableName), aws.ToString(input.IndexName)); ferr != nil {
		return nil, ferr
	}

	if err := validateExpressionAttributes(
		input.ExpressionAttributeNames,
		keysFromAttributeValueMap(input.ExpressionAttributeValues),
		aws.ToString(input.KeyConditionExpression),
		aws.ToString(input.FilterExpression),
		aws.ToString(input.ProjectionExpression),
	); err != nil {
		return nil, err
	}

	if err := checkReservedWords(
		expression{"KeyConditionExpression", aws.ToString(input.KeyConditionExpression)},
		expression{"FilterExpression", aws.ToString(input.FilterExpression)},
		expression{"ProjectionExpression", aws.ToString(input.ProjectionExpression)},
	); err != nil {
		return nil, err
	}

	table, err := c.getTable(aws.ToString(input.TableName))
	if err != nil {
		return nil, err
	}

	if hashKey, ok := table.HashKeyOf(aws.ToString(input.IndexName)); ok {
		if err := checkKeyCondition(aws.ToString(input.KeyConditionExpression), input.ExpressionAttributeNames, hashKey); err != nil {
			return nil, err
		}
	}

	if err := table.CheckIndexRead(core.IndexRead{
		Index: aws.ToString(input.IndexName), ConsistentRead: aws.ToBool(input.ConsistentRead), Select: string(input.Select),
		ProjectionExpression: aws.ToString(input.ProjectionExpression), Aliases: input.ExpressionAttributeNames,
	}); err != nil {
		return nil, mapKnownError(err)
	}

	if input.ScanIndexForward == nil {
		input.ScanIndexForward = aws.Bool(true)
	}

	items, last, err := table.SearchData(core.QueryInput{
		Index:                     aws.ToString(input.IndexName),
		ExpressionAttributeValues: mapAttributeValueMapToTypes(input.ExpressionAttributeValues),
		Aliases:                   input.ExpressionAttributeNames,
		ExclusiveStartKey:         mapAttributeValueMapToTypes(input.ExclusiveStartKey),
		KeyConditionExpression:    aws.ToString(input.KeyConditionExpression),
		FilterExpression:          aws.ToString(input.FilterExpression),
		ProjectionExpression:      aws.ToString(input.ProjectionExpression),
		Limit:                     int64(aws.ToInt32(input.Limit)),
		ScanIndexForward:          aws.ToBool(input.ScanIndexForward),
	})
	if err != nil {
		return nil, mapKnownError(err)
	}

	count := int32(len(items))

	return &QueryOutput{
		Items:            mapTypesSliceToAttributeValue(items),
		Count:            count,
		LastEvaluatedKey: mapTypesMapToAttributeValue(last),
	}, nil
}

// Scan iterates items (optionally filtered) and returns a page of results.
func (c *Client) Scan(ctx context.Context, input *ScanInput) (*ScanOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()

	if ferr := c.failureErrFor(aws.ToString(input.TableName), aws.ToString(input.IndexName)); ferr != nil {
		return nil, ferr
	}

	if err := validateExpressionAttributes(
		input.ExpressionAttributeNames,
		keysFromAttributeValueMap(input.ExpressionAttributeValues),
		aws.ToString(input.ProjectionExpression),
		aws.ToString(input.FilterExpression),
	); err != nil {
		return nil, err
	}

	if err := checkReservedWords(
		expression{"FilterExpression", aws.ToString(input.FilterExpression)},
		expression{"ProjectionExpression", aws.ToString(input.ProjectionExpression)},
	); err != nil {
		return nil, err
	}

	table, err := c.getTable(aws.ToString(input.TableName))
	if err != nil {
		return nil, err
	}

	if err := table.CheckIndexRead(core.IndexRead{
		Index: aws.ToString(input.IndexName), ConsistentRead: aws.ToBool(input.ConsistentRead), Select: string(input.Select),
		ProjectionExpression: aws.ToString(input.ProjectionExpression), Aliases: input.ExpressionAttributeNames,
	}); err != nil {
		return nil, mapKnownError(err)
	}

	items, last, err := table.SearchData(core.QueryInput{
		Index:                     aws.ToString(input.IndexName),
		ExpressionAttributeValues: mapAttributeValueMapToTypes(input.ExpressionAttributeValues),
		Aliases:                   input.ExpressionAttributeNames,
		ExclusiveStartKey:         mapAttributeValueMapToTypes(input.ExclusiveStartKey),
		FilterExpression:          aws.ToString(input.FilterExpression),
		ProjectionExpression:      aws.ToString(input.ProjectionExpression),
		Limit:                     int64(aws.ToInt32(input.Limit)),
		Scan:                      true,
		ScanIndexForward:          true,
	})
	if err != nil {
		return nil, mapKnownError(err)
	}

	count := int32(len(items))

	return &ScanOutput{
		Items:            mapTypesSliceToAttributeValue(items),
		Count:            count,
		LastEvaluatedKey: mapTypesMapToAttributeValue(last),
	}, nil
}

const (
	batchWriteItemRequestsLimit = 25
	batchGetItemRequestsLimit   = 100
)

// DynamoDB returns this message when a WriteRequest has both Put and Delete, or neither.
var errBatchWriteRequestShape = &smithy.GenericAPIError{
	Code:    "ValidationException",
	Message: "Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes",
}

func validateWriteRequest(req WriteRequest) error {
	hasPut := req.PutRequest != nil

	hasDel := req.DeleteRequest != nil
	if hasPut == hasDel {
		return errBatchWriteRequestShape
	}

	return nil
}

func validateBatchWriteItemInput(input *BatchWriteItemInput) error {
	if input == nil {
		return nil
	}

	count := 0

	for _, reqs := range input.RequestItems {
		for _, req := range reqs {
			if err := validateWriteRequest(req); err != nil {
				return err
			}

			count++
		}
	}

	if count > batchWriteItemRequestsLimit {
		return &smithy.GenericAPIError{
			Code:    "ValidationException",
			Message: "Too many items requested for the BatchWriteItem call",
		}
	}

	return nil
}

func batchWriteRequestKey(req WriteRequest) map[string]*AttributeValue {
	if req.PutRequest != nil {
		return req.PutRequest.Item
	}

	if req.DeleteRequest != nil {
		return req.DeleteRequest.Key
	}

	return nil
}

// BatchWriteItem runs put and delete sub-requests in order. An emulated failure
// (global EmulateFailure or table-scoped EmulateFailureForTable touching any table in
// the batch) hard-fails the whole call, mirroring DynamoDB returning a 500 for the
// request. UnprocessedItems is produced only by EmulateUnprocessedItems, whose
// predicate selects individual sub-requests to leave unprocessed while the rest are
// applied.
func (c *Client) BatchWriteItem(ctx context.Context, input *BatchWriteItemInput) (*BatchWriteItemOutput, error) {
	if err := validateBatchWriteItemInput(input); err != nil {
		return nil, err
	}

	emulation := c.batchEmulationFor(tableNames(input.RequestItems)...)
	if emulation.failErr != nil {
		return nil, emulation.failErr
	}

	unprocessed := map[string][]WriteRequest{}

	for tableName, reqs := range input.RequestItems {
		for i, req := range reqs {
			if emulation.unprocessed(tableName, i, batchWriteRequestKey(req)) {
				unprocessed[tableName] = append(unprocessed[tableName], req)

				continue
			}

			var err error
			if req.PutRequest != nil {
				_, err = c.PutItem(ctx, &PutItemInput{
					TableName: aws.String(tableName),
					Item:      req.PutRequest.Item,
				})
			}

			if req.DeleteRequest != nil {
				_, err = c.DeleteItem(ctx, &DeleteItemInput{
					TableName: aws.String(tableName),
					Key:       req.DeleteRequest.Key,
				})
			}

			if err != nil {
				return nil, err
			}
		}
	}

	return &BatchWriteItemOutput{UnprocessedItems: unprocessed}, nil
}

func tableNames[V any](requestItems map[string]V) []string {
	names := make([]string, 0, len(requestItems))
	for name := range requestItems {
		names = append(names, name)
	}

	return names
}

func validateBatchGetItemInput(input *BatchGetItemInput) error {
	if input == nil {
		return nil
	}

	count := 0

	for _, reqs := range input.RequestItems {
		count += len(reqs.Keys)
	}

	if count == 0 {
		return &smithy.GenericAPIError{
			Code:    "ValidationException",
			Message: "1 validation error detected: Value '{}' at 'requestItems' failed to satisfy constraint: Member must have length greater than or equal to 1",
		}
	}

	if count > batchGetItemRequestsLimit {
		return &smithy.GenericAPIError{
			Code:    "ValidationException",
			Message: "Too many items requested for the BatchGetItem call",
		}
	}

	return nil
}

// BatchGetItem retrieves multiple items across one or more tables. Validation errors
// (invalid key schema, malformed AttributeValues, or missing tables) fail the whole
// batch. An emulated failure (global EmulateFailure or table-scoped
// EmulateFailureForTable touching any table in the batch) hard-fails the whole call.
// UnprocessedKeys is produced only by EmulateUnprocessedItems, whose predicate selects
// individual keys to leave unprocessed while the rest are fetched.
func (c *Client) BatchGetItem(ctx context.Context, input *BatchGetItemInput) (*BatchGetItemOutput, error) {
	if err := validateBatchGetItemInput(input); err != nil {
		return nil, err
	}

	c.mu.Lock()
	err := c.checkBatchGetDuplicates(input)
	c.mu.Unlock()

	if err != nil {
		return nil, err
	}

	emulation := c.batchEmulationFor(tableNames(input.RequestItems)...)
	if emulation.failErr != nil {
		return nil, emulation.failErr
	}

	responses := map[string][]map[string]*AttributeValue{}
	unprocessed := map[string]KeysAndAttributes{}

	for tableName, reqs := range input.RequestItems {
		tableResponses, unprocessedKeys, err := c.batchGetItemForTable(ctx, tableName, reqs, emulation)
		if err != nil {
			return nil, err
		}

		responses[tableName] = tableResponses

		if len(unprocessedKeys) > 0 {
			tableUnprocessed := reqs
			tableUnprocessed.Keys = unprocessedKeys
			unprocessed[tableName] = tableUnprocessed
		}
	}

	return &BatchGetItemOutput{Responses: responses, UnprocessedKeys: unprocessed}, nil
}

func (c *Client) batchGetItemForTable(ctx context.Context, tableName string, reqs KeysAndAttributes, emulation batchEmulation) ([]map[string]*AttributeValue, []map[string]*AttributeValue, error) {
	if err := validateExpressionAttributes(reqs.ExpressionAttributeNames, nil, aws.ToString(reqs.ProjectionExpression)); err != nil {
		return nil, nil, err
	}

	responses := make([]map[string]*AttributeValue, 0, len(reqs.Keys))
	unprocessedKeys := make([]map[string]*AttributeValue, 0, len(reqs.Keys))

	for i, key := range reqs.Keys {
		if emulation.unprocessed(tableName, i, key) {
			unprocessedKeys = append(unprocessedKeys, key)

			continue
		}

		item, err := c.GetItem(ctx, &GetItemInput{
			TableName:                aws.String(tableName),
			Key:                      key,
			ConsistentRead:           reqs.ConsistentRead,
			ExpressionAttributeNames: reqs.ExpressionAttributeNames,
			ProjectionExpression:     reqs.ProjectionExpression,
		})
		if err != nil {
			return nil, nil, err
		}

		if len(item.Item) > 0 {
			responses = append(responses, item.Item)
		}
	}

	return responses, unprocessedKeys, nil
}

// transactOp is what one TransactWriteItem asks, whatever its kind.
type transactOp struct {
	tableName string
	key       map[string]*AttributeValue // Put: the whole item
	isPut     bool
	condition string
	names     map[string]string
	values    map[string]*AttributeValue
	returnOld bool
	exprs     []string // every expression of the item, for the names and values check
}

func transactOpOf(item TransactWriteItem) (transactOp, error) {
	allOld := ddbtypes.ReturnValuesOnConditionCheckFailureAllOld

	switch {
	case item.Put != nil:
		p := item.Put

		return transactOp{aws.ToString(p.TableName), p.Item, true, aws.ToString(p.ConditionExpression), p.ExpressionAttributeNames, p.ExpressionAttributeValues,
			p.ReturnValuesOnConditionCheckFailure == allOld, []string{aws.ToString(p.ConditionExpression)}}, nil
	case item.Update != nil:
		u := item.Update

		return transactOp{aws.ToString(u.TableName), u.Key, false, aws.ToString(u.ConditionExpression), u.ExpressionAttributeNames, u.ExpressionAttributeValues,
			u.ReturnValuesOnConditionCheckFailure == allOld, []string{aws.ToString(u.UpdateExpression), aws.ToString(u.ConditionExpression)}}, nil
	case item.Delete != nil:
		d := item.Delete

		return transactOp{aws.ToString(d.TableName), d.Key, false, aws.ToString(d.ConditionExpression), d.ExpressionAttributeNames, d.ExpressionAttributeValues,
			d.ReturnValuesOnConditionCheckFailure == allOld, []string{aws.ToString(d.ConditionExpression)}}, nil
	case item.ConditionCheck != nil:
		cc := item.ConditionCheck

		return transactOp{aws.ToString(cc.TableName), cc.Key, false, aws.ToString(cc.ConditionExpression), cc.ExpressionAttributeNames, cc.ExpressionAttributeValues,
			cc.ReturnValuesOnConditionCheckFailure == allOld, []string{aws.ToString(cc.ConditionExpression)}}, nil
	default:
		return transactOp{}, validationError("transaction item must include one of Put, Update, Delete, or ConditionCheck")
	}
}

// prepareTransact validates every item before anything is evaluated or
// written, as DynamoDB does, and resolves the table and stored key of each.
func (c *Client) prepareTransact(items []TransactWriteItem) ([]transactOp, []touched, error) {
	ops := make([]transactOp, len(items))
	targets := make([]touched, len(items))
	seenKeys := make(map[string]struct{}, len(items))

	for i, item := range items {
		op, err := transactOpOf(item)
		if err != nil {
			return nil, nil, err
		}

		if err := validateExpressionAttributes(op.names, keysFromAttributeValueMap(op.values), op.exprs...); err != nil {
			return nil, nil, err
		}

		if err := checkTransactItemExpressions(item); err != nil {
			return nil, nil, err
		}

		if ferr := c.failureErrFor(op.tableName, ""); ferr != nil {
			return nil, nil, ferr
		}

		table, err := c.getTable(op.tableName)
		if err != nil {
			return nil, nil, mapKnownError(err)
		}

		keyMap := mapAttributeValueMapToTypes(op.key)
		if vErr := types.ValidateItemMap(keyMap); vErr != nil {
			return nil, nil, mapKnownError(types.NewError("ValidationException", vErr.Error(), nil))
		}

		if !op.isPut {
			if keyErr := table.ValidatePrimaryKeyMap(keyMap); keyErr != nil {
				return nil, nil, validationError(keyErr.Error())
			}
		}

		key, err := table.KeySchema.GetKey(table.AttributesDef, keyMap)
		if err != nil {
			return nil, nil, validationError(err.Error())
		}

		id := op.tableName + "|" + key
		if _, exists := seenKeys[id]; exists {
			return nil, nil, validationError("Transaction request cannot include multiple operations on one item")
		}

		seenKeys[id] = struct{}{}
		ops[i], targets[i] = op, touched{table: table, key: key}
	}

	return ops, targets, nil
}

// checkTransactConditions evaluates every item's condition against the
// items as they are before the transaction and cancels it, with a reason
// for each item, if any fails: DynamoDB reports every failed condition, not
// only the first.
func checkTransactConditions(ops []transactOp, targets []touched) error {
	reasons := make([]ddbtypes.CancellationReason, len(ops))
	codes := make([]string, len(ops))
	failed := false

	for i, op := range ops {
		reasons[i], codes[i] = ddbtypes.CancellationReason{Code: aws.String("None")}, "None"

		if op.condition == "" {
			continue
		}

		t := targets[i]

		stored, exists := t.table.Data[t.key]
		if !exists {
			stored = map[string]*types.Item{}
		}

		matched, err := t.table.InterpreterMatch(interpreter.MatchInput{
			TableName:      t.table.Name,
			Expression:     op.condition,
			ExpressionType: interpreter.ExpressionTypeConditional,
			Item:           stored,
			Aliases:        op.names,
			Attributes:     mapAttributeValueMapToTypes(op.values),
		})
		if err != nil {
			return validationError(err.Error())
		}

		if matched {
			continue
		}

		failed = true
		codes[i] = "ConditionalCheckFailed"
		reasons[i] = ddbtypes.CancellationReason{Code: aws.String(codes[i]), Message: aws.String(core.ErrConditionalRequestFailed.Error())}

		if op.returnOld && exists {
			reasons[i].Item = mapTypesMapToDDBAttributeValue(stored)
		}
	}

	if !failed {
		return nil
	}

	return &ddbtypes.TransactionCanceledException{
		Message:             aws.String("Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(codes, ", ") + "]"),
		CancellationReasons: reasons,
	}
}

// TransactWriteItems executes a set of Put, Update, Delete, and ConditionCheck operations atomically.
// Every condition is checked first; then the writes are applied, each item's previous state kept,
// and if one fails the ones before it are put back. Its cost depends on the items it touches, not
// on the size of the tables. The client's lock serialises it with every other request.
// A repeat of a committed transaction with its ClientRequestToken, within 10 minutes of
// its completion, succeeds without applying it again; the token with other parameters is
// an IdempotentParameterMismatchException.
func (c *Client) TransactWriteItems(ctx context.Context, input *TransactWriteItemsInput) (*TransactWriteItemsOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()

	if c.forceFailureErr != nil {
		return nil, c.forceFailureErr
	}

	if err := checkTransactItemCount(len(input.TransactItems)); err != nil {
		return nil, err
	}

	if err := validateClientRequestToken(input.ClientRequestToken); err != nil {
		return nil, err
	}

	if repeat, err := c.repeated(input, c.now()); repeat || err != nil {
		if err != nil {
			return nil, err
		}

		return &TransactWriteItemsOutput{}, nil
	}

	ops, targets, err := c.prepareTransact(input.TransactItems)
	if err != nil {
		return nil, err
	}

	if err := checkTransactConditions(ops, targets); err != nil {
		return nil, err
	}

	n := len(input.TransactItems)
	written := make([]touched, 0, n)

	for i, item := range input.TransactItems {
		if item.ConditionCheck != nil {
			continue
		}

		written = append(written, touch(targets[i].table, targets[i].key))

		if execErr := c.runTransactItem(i, n, item); execErr != nil {
			for j := len(written) - 1; j >= 0; j-- {
				// Putting back a state the table held cannot fail its key checks.
				_ = written[j].table.RestoreItem(written[j].key, written[j].old)
			}

			return nil, execErr
		}
	}

	c.publish(false, written...)
	c.remember(input, c.now())

	return &TransactWriteItemsOutput{}, nil
}

func validateTransactGetItemsInput(c *Client, input *TransactGetItemsInput) error {
	if input == nil {
		return nil
	}

	count := len(input.TransactItems)
	if count == 0 {
		return &smithy.GenericAPIError{
			Code:    "ValidationException",
			Message: "1 validation error detected: Value '{}' at 'transactItems' failed to satisfy constraint: Member must have length greater than or equal to 1",
		}
	}

	if count > batchGetItemRequestsLimit {
		return &smithy.GenericAPIError{
			Code:    "ValidationException",
			Message: "Too many items requested for the TransactGetItems call",
		}
	}

	seenKeys := make(map[string]struct{}, count)

	for _, item := range input.TransactItems {
		if item.Get == nil {
			return &smithy.GenericAPIError{
				Code:    "ValidationException",
				Message: "transaction item must include Get",
			}
		}

		get := item.Get

		tableName := aws.ToString(get.TableName)
		if tableName == "" {
			return &smithy.GenericAPIError{
				Code:    "ValidationException",
				Message: "TableName must not be null",
			}
		}

		table, err := c.getTable(tableName)
		if err != nil {
			return mapKnownError(err)
		}

		internalKeyMap := mapAttributeValueMapToTypes(get.Key)
		if vErr := types.ValidateItemMap(internalKeyMap); vErr != nil {
			return mapKnownError(types.NewError("ValidationException", vErr.Error(), nil))
		}

		if keyErr := table.ValidatePrimaryKeyMap(internalKeyMap); keyErr != nil {
			return &smithy.GenericAPIError{Code: "ValidationException", Message: keyErr.Error()}
		}

		key, err := table.KeySchema.GetKey(table.AttributesDef, internalKeyMap)
		if err != nil {
			return &smithy.GenericAPIError{Code: "ValidationException", Message: err.Error()}
		}

		id := tableName + "|" + key

		if _, exists := seenKeys[id]; exists {
			return &smithy.GenericAPIError{
				Code:    "ValidationException",
				Message: "Transaction request cannot include multiple operations on one item",
			}
		}

		seenKeys[id] = struct{}{}
	}

	return nil
}

// TransactGetItems atomically retrieves multiple items from one or more tables.
func (c *Client) TransactGetItems(ctx context.Context, input *TransactGetItemsInput) (*TransactGetItemsOutput, error) {
	if err := validateTransactGetItemsInput(c, input); err != nil {
		return nil, err
	}

	responses := make([]ItemResponse, 0, len(input.TransactItems))

	for _, item := range input.TransactItems {
		get := item.Get

		out, err := c.GetItem(ctx, &GetItemInput{
			TableName:                get.TableName,
			Key:                      get.Key,
			ExpressionAttributeNames: get.ExpressionAttributeNames,
			ProjectionExpression:     get.ProjectionExpression,
		})
		if err != nil {
			return nil, err
		}

		responses = append(responses, ItemResponse{Item: out.Item})
	}

	return &TransactGetItemsOutput{Responses: responses}, nil
}

func (c *Client) runTransactItem(i, n int, item TransactWriteItem) error {
	switch {
	case item.Put != nil:
		return c.runTransactPut(i, n, item.Put)
	case item.Update != nil:
		return c.runTransactUpdate(i, n, item.Update)
	case item.Delete != nil:
		return c.runTransactDelete(i, n, item.Delete)
	default:
		return &smithy.GenericAPIError{Code: "ValidationException", Message: "transaction item must include one of Put, Update, Delete, or ConditionCheck"}
	}
}

// The runTransact* functions apply one item of a transaction whose input
// prepareTransact validated and whose conditions checkTransactConditions
// checked against the same state: they do neither again.
func (c *Client) runTransactPut(i, n int, put *Put) error {
	table, tErr := c.getTable(aws.ToString(put.TableName))
	if tErr != nil {
		return mapKnownError(tErr)
	}

	if _, opErr := table.Put(&types.PutItemInput{
		TableName:                 put.TableName,
		ExpressionAttributeNames:  put.ExpressionAttributeNames,
		ExpressionAttributeValues: mapAttributeValueMapToTypes(put.ExpressionAttributeValues),
		Item:                      mapAttributeValueMapToTypes(put.Item),
	}); opErr != nil {
		return newServerTransactionCancelledError(i, n, opErr)
	}

	return nil
}

func (c *Client) runTransactUpdate(i, n int, update *Update) error {
	table, tErr := c.getTable(aws.ToString(update.TableName))
	if tErr != nil {
		return mapKnownError(tErr)
	}

	_, opErr := table.Update(&types.UpdateItemInput{
		TableName:                           update.TableName,
		ExpressionAttributeNames:            update.ExpressionAttributeNames,
		ExpressionAttributeValues:           mapAttributeValueMapToTypes(update.ExpressionAttributeValues),
		Key:                                 mapAttributeValueMapToTypes(update.Key),
		UpdateExpression:                    aws.ToString(update.UpdateExpression),
		ReturnValuesOnConditionCheckFailure: toStringPtr(string(update.ReturnValuesOnConditionCheckFailure)),
	})
	if opErr != nil {
		if errors.Is(opErr, interpreter.ErrSyntaxError) {
			return &smithy.GenericAPIError{Code: "ValidationException", Message: opErr.Error()}
		}

		return newServerTransactionCancelledError(i, n, opErr)
	}

	return nil
}

func (c *Client) runTransactDelete(i, n int, del *Delete) error {
	table, tErr := c.getTable(aws.ToString(del.TableName))
	if tErr != nil {
		return mapKnownError(tErr)
	}

	if _, opErr := table.Delete(&types.DeleteItemInput{
		TableName:                 del.TableName,
		ExpressionAttributeNames:  toStringPtrMap(del.ExpressionAttributeNames),
		ExpressionAttributeValues: mapAttributeValueMapToTypes(del.ExpressionAttributeValues),
		Key:                       mapAttributeValueMapToTypes(del.Key),
	}); opErr != nil {
		return newServerTransactionCancelledError(i, n, opErr)
	}

	return nil
}

func newServerTransactionCancelledError(i, n int, opErr error) error {
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(opErr, &ccf) {
		return mapKnownError(opErr)
	}

	reasons := make([]ddbtypes.CancellationReason, n)
	for j := range reasons {
		reasons[j] = ddbtypes.CancellationReason{Code: aws.String("None")}
	}

	reasons[i] = ddbtypes.CancellationReason{
		Code:    aws.String("ConditionalCheckFailed"),
		Message: aws.String(core.ErrConditionalRequestFailed.Error()),
	}

	if ccf.Item != nil {
		reasons[i].Item = mapTypesMapToDDBAttributeValue(ccf.Item)
	}

	return &ddbtypes.TransactionCanceledException{
		Message:             aws.String("Transaction cancelled, please refer cancellation reasons for specific reasons [ConditionalCheckFailed]"),
		CancellationReasons: reasons,
	}
}

// Utilities
func mapTypesSliceToAttributeValue(items []map[string]*types.Item) []map[string]*AttributeValue {
	if len(items) == 0 {
		return nil
	}

	out := make([]map[string]*AttributeValue, len(items))
	for i, it := range items {
		out[i] = mapTypesMapToAttributeValue(it)
	}

	return out
}

func mapKnownError(err error) error {
	if err == nil {
		return nil
	}

	intErr, ok := errors.AsType[types.Error](err)
	if !ok {
		return err
	}

	switch intErr.Code() {
	case "ConditionalCheckFailedException":
		checkErr := &ddbtypes.ConditionalCheckFailedException{
			Message: aws.String(intErr.Message()),
		}

		if conditionalErr, ok := errors.AsType[*types.ConditionalCheckFailedException](err); ok {
			checkErr.Item = mapTypesMapToDDBAttributeValue(conditionalErr.Item)
		}

		return checkErr
	case "ResourceNotFoundException":
		return &ddbtypes.ResourceNotFoundException{Message: aws.String(intErr.Message())}
	default:
		return &smithy.GenericAPIError{Code: intErr.Code(), Message: intErr.Message()}
	}
}

func toStringPtrMap(in map[string]string) map[string]*string {
	if len(in) == 0 {
		return nil
	}

	out := make(map[string]*string, len(in))

	for k, v := range in {
		out[k] = aws.String(v)
	}

	return out
}
