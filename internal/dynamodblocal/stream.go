package dynamodblocal

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/truora/minidyn/server"
)

// stream is one table's DynamoDB stream, kept in memory: a single shard,
// so the records of an item are in the order of its writes (DynamoDB keeps
// an item's records in one shard too). Records are kept for the retention
// period and up to a limit, the oldest dropped first.
type stream struct {
	table, arn, viewType, shardID string
	retention                     time.Duration
	limit                         int

	mu    sync.Mutex
	recs  []record // recs[i] has sequence number first+i
	first uint64   // sequence number of recs[0] (or of the next record if none)
	grew  chan struct{}
}

// record is a stream record as Lambda hands it to a function: JSON.
type record struct {
	seq     uint64 // its place in the stream (here)
	arrival time.Time
	data    []byte
	sn      string // its SequenceNumber when not sequenceNumber(seq) (DynamoDB Local's)
	shard   string // its shard when not the stream's (DynamoDB Local's)
}

// sequenceNumber is the record's SequenceNumber, as in its data.
func (r record) sequenceNumber() string {
	if r.sn != "" {
		return r.sn
	}
	return sequenceNumber(r.seq)
}

func newStream(table, arn, viewType string, cfg Config) *stream {
	h := fnv.New32a()
	h.Write([]byte(arn))
	return &stream{
		table: table, arn: arn, viewType: viewType,
		shardID:   fmt.Sprintf("shardId-%020d-%08x", cfg.Clock.Now().UnixMilli(), h.Sum32()),
		retention: cfg.StreamRetention, limit: cfg.StreamRecordLimit,
		first: 1, grew: make(chan struct{}),
	}
}

// append adds the records of the changes one write committed to this
// stream, together: a reader sees all of them or none. The server calls it
// in commit order (under minidyn's lock), so sequence numbers follow it.
func (s *stream) append(changes []server.ItemChange, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ch := range changes {
		seq := s.first + uint64(len(s.recs))
		s.recs = append(s.recs, record{seq: seq, arrival: at, data: recordJSON(ch, seq, at)})
	}
	s.trim(at)
	close(s.grew)
	s.grew = make(chan struct{})
}

// appendRecords adds records read from DynamoDB Local's stream (a
// mapping's own buffer), numbering them in the order given.
func (s *stream) appendRecords(recs []record, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		r.seq, r.arrival = s.first+uint64(len(s.recs)), at
		s.recs = append(s.recs, r)
	}
	close(s.grew)
	s.grew = make(chan struct{})
}

// release drops the records before pos, which the stream's one mapping
// has delivered (a mapping's own buffer; a shared stream keeps them).
func (s *stream) release(pos uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	drop := min(int(pos-min(pos, s.first)), len(s.recs))
	clear(s.recs[:drop])
	s.recs = s.recs[drop:]
	s.first += uint64(drop)
}

// size is how many records the stream holds.
func (s *stream) size() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.recs)
}

// trim drops the records past retention and, over the limit, the oldest
// tenth (so that dropping costs O(1) a record).
func (s *stream) trim(now time.Time) {
	drop := 0
	for drop < len(s.recs) && now.Sub(s.recs[drop].arrival) > s.retention {
		drop++
	}
	if len(s.recs)-drop > s.limit {
		drop = len(s.recs) - s.limit + s.limit/10
	}
	if drop == 0 {
		return
	}
	clear(s.recs[:drop])
	s.recs = s.recs[drop:]
	s.first += uint64(drop)
}

// read returns up to n records from sequence number pos on (from the
// oldest kept if pos was trimmed), where it started, and a channel closed
// when the stream grows.
func (s *stream) read(pos uint64, n int) ([]record, uint64, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pos = max(pos, s.first)
	i := min(int(pos-s.first), len(s.recs))
	end := min(i+n, len(s.recs))
	return append([]record(nil), s.recs[i:end]...), pos, s.grew
}

// latest is the sequence number the next record will have.
func (s *stream) latest() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first + uint64(len(s.recs))
}

// oldest is the sequence number of the oldest record kept.
func (s *stream) oldest() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first
}

// StreamRecords returns the records of table's stream from sequence
// number from on (0: the oldest kept), each as Lambda passes it to a
// function (an events.DynamoDBEventRecord's JSON), and the sequence
// number the next record will have: for a caller that delivers the
// stream itself, from one process to the next (make invoke's session).
func (s *Server) StreamRecords(ctx context.Context, table string, from uint64) ([]json.RawMessage, uint64, error) {
	if s.ref != nil {
		return nil, 0, fmt.Errorf("read the stream of %s: the embedded server's own change feed; DynamoDB Local's is read through Subscribe", table)
	}
	info, err := s.describe(ctx, table)
	if err != nil {
		return nil, 0, err
	}
	if info.StreamViewType == "" {
		return nil, 0, fmt.Errorf("read the stream of %s: %w", table, ErrNoStream)
	}
	st := s.stream(info.StreamARN, table, info.StreamViewType)
	next := st.latest()
	recs, _, _ := st.read(from, int(next-min(from, next)))
	out := make([]json.RawMessage, len(recs))
	for i, r := range recs {
		out[i] = r.data
	}
	return out, next, nil
}
