package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/tablekeys"
)

var _ sandbox.Slots = (*Dynamo)(nil)

// Attributes of a slot item.
const (
	attrHolder      = "holder"
	attrSlotExpires = "slotExpiresAt" // epoch milliseconds
)

// slotTries is how many free-looking slots of a shard are tried before
// the next shard: another turn may take the one read free first.
const slotTries = 3

// AcquireSlot holds one of limit slots (tablekeys.SlotShards) for holder
// until until. It reads one shard, picked at random, with one strongly
// consistent Query (its slots, held or expired), and takes a free one
// with a conditional Put (free: never written, or expired by now); a
// shard with none free sends it to one other shard. So a refusal may
// come while another shard has a slot free: near the cap, the cap is a
// little lower than limit, never higher.
func (d *Dynamo) AcquireSlot(ctx context.Context, limit int, holder string, now, until time.Time) (sandbox.Slot, error) {
	if limit <= 0 {
		return sandbox.Slot{}, fmt.Errorf("acquire sandbox slot: limit %d is not positive", limit)
	}
	n := tablekeys.SlotShards(limit)
	first := rand.IntN(n)
	for i := range min(n, 2) {
		shard := (first + i) % n
		slot, ok, err := d.acquireInShard(ctx, limit, shard, holder, now, until)
		if err != nil || ok {
			return slot, err
		}
	}
	return sandbox.Slot{}, sandbox.ErrAtCapacity
}

// acquireInShard takes a free slot of one shard, if it has one.
func (d *Dynamo) acquireInShard(ctx context.Context, limit, shard int, holder string, now, until time.Time) (sandbox.Slot, bool, error) {
	idx, ok, _, err := d.takeSlot(ctx, tablekeys.SandboxSlotPartition(shard), tablekeys.ShardSlots(limit, shard), holder, now, until)
	if err != nil {
		return sandbox.Slot{}, false, fmt.Errorf("sandbox slots of shard %d: %w", shard, err)
	}
	return sandbox.Slot{Shard: shard, Index: idx, Holder: holder}, ok, nil
}

// takeSlot takes one of the slots 0..n-1 of a partition for holder until
// until: it reads the partition's slots with one strongly consistent
// Query (held or expired), and takes a free one (never written, or
// expired by now) with a conditional Put, trying up to slotTries. With
// none taken, it returns when the first held slot lapses.
func (d *Dynamo) takeSlot(ctx context.Context, partition string, n int, holder string, now, until time.Time) (idx int, ok bool, firstLapse time.Time, err error) {
	held := map[int]bool{}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(d.tables.State),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": tablekeys.PK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(partition)},
		ConsistentRead:            aws.Bool(true),
	}
	err = d.queryPages(ctx, in, 0, 0, func(item map[string]types.AttributeValue) error {
		i, ok := tablekeys.SlotIndex(strAttr(item, tablekeys.SK))
		if !ok {
			return fmt.Errorf("slot item %q: %w", strAttr(item, tablekeys.SK), errMalformedEntry)
		}
		if exp := numAttr(item, attrSlotExpires); exp > now.UnixMilli() {
			held[i] = true
			if lapse := time.UnixMilli(exp); firstLapse.IsZero() || lapse.Before(firstLapse) {
				firstLapse = lapse
			}
		}
		return nil
	})
	if err != nil {
		return 0, false, time.Time{}, fmt.Errorf("read: %w", err)
	}
	var free []int
	for i := range n {
		if !held[i] {
			free = append(free, i)
		}
	}
	rand.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
	for _, i := range free[:min(len(free), slotTries)] {
		item := stateKey(tablekeys.Key{PK: partition, SK: tablekeys.SlotSort(i)})
		item[attrHolder] = str(holder)
		item[attrSlotExpires] = num(until.UnixMilli())
		// Removed by the table's TTL a day after it lapsed; lapsed, it is
		// free whether or not it is still there.
		item[tablekeys.TTL] = num(until.Add(24 * time.Hour).Unix())
		_, err := d.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                 aws.String(d.tables.State),
			Item:                      item,
			ConditionExpression:       aws.String("attribute_not_exists(#pk) OR #exp <= :now"),
			ExpressionAttributeNames:  map[string]string{"#pk": tablekeys.PK, "#exp": attrSlotExpires},
			ExpressionAttributeValues: map[string]types.AttributeValue{":now": num(now.UnixMilli())},
		})
		if _, lost := isConditionFailed(err); lost {
			continue // taken since the read
		}
		if err != nil {
			return 0, false, time.Time{}, fmt.Errorf("take slot %d: %w", i, err)
		}
		return i, true, time.Time{}, nil
	}
	return 0, false, firstLapse, nil
}

// ReleaseSlot deletes the slot if holder still holds it. A slot taken
// over since (it had lapsed) is the new holder's: a failed condition is
// that outcome, not an error.
func (d *Dynamo) ReleaseSlot(ctx context.Context, slot sandbox.Slot) error {
	if err := d.dropSlot(ctx, tablekeys.SandboxSlot(slot.Shard, slot.Index), slot.Holder); err != nil {
		return fmt.Errorf("release sandbox slot %d of shard %d: %w", slot.Index, slot.Shard, err)
	}
	return nil
}

// dropSlot deletes a slot item if holder still holds it.
func (d *Dynamo) dropSlot(ctx context.Context, key tablekeys.Key, holder string) error {
	_, err := d.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(d.tables.State),
		Key:                       stateKey(key),
		ConditionExpression:       aws.String("#h = :h"),
		ExpressionAttributeNames:  map[string]string{"#h": attrHolder},
		ExpressionAttributeValues: map[string]types.AttributeValue{":h": str(holder)},
	})
	if _, ok := isConditionFailed(err); ok {
		return nil
	}
	return err
}
