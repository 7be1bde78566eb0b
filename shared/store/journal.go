package store

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tablekeys"
	"github.com/commonly/runtime/shared/turns"
)

var _ turns.JournalStore = (*Dynamo)(nil)

// attrJournalData is a journal entry's data.
const attrJournalData = "data"

// maxJournalWrite bounds the entries one write carries: a transaction
// takes at most 100 items, one of them the run.
const maxJournalWrite = 99

// journalPuts are the puts of a run's new journal entries, for the
// transaction that writes them with the run (CheckpointRun). Each entry
// expires tablekeys.JournalRetention after the run's admission.
func (d *Dynamo) journalPuts(r *runs.Run, journal []turns.JournalEntry) ([]types.TransactWriteItem, error) {
	if len(journal) > maxJournalWrite {
		return nil, fmt.Errorf("checkpoint run %s: %d journal entries in one write, at most %d", r.RunID, len(journal), maxJournalWrite)
	}
	ttl := num(r.CreatedAt.Add(tablekeys.JournalRetention).Unix())
	puts := make([]types.TransactWriteItem, 0, len(journal))
	for _, e := range journal {
		if e.Seq < 0 || e.Seq >= tablekeys.MaxJournalEntries {
			return nil, fmt.Errorf("checkpoint run %s: journal entry %d out of range", r.RunID, e.Seq)
		}
		item := stateKey(tablekeys.Journal(r.RunID, e.Seq))
		item[attrJournalData], item[tablekeys.TTL] = str(e.Data), ttl
		puts = append(puts, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(d.tables.State), Item: item}})
	}
	return puts, nil
}

// ReadJournal returns a run's journal entries in order, with a strongly
// consistent Query of its partition (a takeover reads what the stopped
// attempt's last write left, nothing older).
func (d *Dynamo) ReadJournal(ctx context.Context, runID string) ([]turns.JournalEntry, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(d.tables.State),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": tablekeys.PK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(tablekeys.JournalPartition(runID))},
		ConsistentRead:            aws.Bool(true),
	}
	var out []turns.JournalEntry
	err := d.queryPages(ctx, in, 0, 0, func(item map[string]types.AttributeValue) error {
		sk := strAttr(item, tablekeys.SK)
		seq, ok := tablekeys.JournalSeq(sk)
		if !ok || seq != len(out) {
			// Entries are written in order, in writes that each carry
			// every entry after the last durable one: a gap is not ours.
			return fmt.Errorf("journal of run %s: entry %q where %d was due: %w", runID, sk, len(out), errMalformedEntry)
		}
		out = append(out, turns.JournalEntry{Seq: seq, Data: strAttr(item, attrJournalData)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the journal of run %s: %w", runID, err)
	}
	return out, nil
}
