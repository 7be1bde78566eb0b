package main

import "testing"

// A strongly consistent read costs a unit per 4 KB of the item or part,
// and at least one (a missing item too).
func TestReadUnits(t *testing.T) {
	for size, want := range map[int64]int64{0: 1, 1: 1, 4096: 1, 4097: 2, 10 * 1024: 3, 400 * 1024: 100} {
		if got := readUnits(size); got != want {
			t.Errorf("readUnits(%d) = %d, want %d", size, got, want)
		}
	}
}

// A write belongs to the latest poll: its bytes and the time from the
// item's arrival.
func TestRecorderAttributesWritesToTheLatestPoll(t *testing.T) {
	var r recorder
	r.wrote(10) // before any poll: dropped
	r.poll(5000)
	r.wrote(100)
	r.wrote(50)
	r.poll(6000)
	s := r.take()
	if len(s.Polls) != 2 || s.Polls[0].WroteBytes != 150 || s.Polls[0].ReadUnits != 2 || s.Polls[1].WroteBytes != 0 || s.Polls[1].ItemBytes != 6000 {
		t.Errorf("polls %+v", s.Polls)
	}
	if len(r.take().Polls) != 0 {
		t.Error("take did not reset the polls")
	}
}
