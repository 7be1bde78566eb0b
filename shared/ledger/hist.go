package ledger

import "math"

// Hist is a fixed-bucket histogram of non-negative integers (micro-dollars,
// tokens, milliseconds), kept sparse as pairs [bucket, count, bucket,
// count, ...] in ascending bucket order, so that a user-day's few
// distinct values cost a few numbers and any two histograms add up.
//
// The buckets are logarithmic, BucketsPerDecade to a power of ten:
// bucket 0 holds 0 and 1, bucket i > 0 the values in
// (BucketUpper(i-1), BucketUpper(i)]. A percentile read from a sum of
// histograms is a bucket's upper bound: at most 12.2% above the exact
// value (10^(1/20)).
type Hist []int64

// BucketsPerDecade is the histograms' resolution.
const BucketsPerDecade = 20

// BucketUpper is the largest value bucket i holds.
func BucketUpper(i int) int64 {
	if i <= 0 {
		return 1
	}
	return int64(math.Floor(math.Pow(10, float64(i)/BucketsPerDecade) + 1e-9))
}

// Bucket is the bucket v falls in (negative values count as 0).
func Bucket(v int64) int {
	if v <= 1 {
		return 0
	}
	i := int(math.Ceil(math.Log10(float64(v))*BucketsPerDecade - 1e-9))
	// Correct the float's rounding against the integer bounds.
	for i > 0 && v <= BucketUpper(i-1) {
		i--
	}
	for v > BucketUpper(i) {
		i++
	}
	return i
}

// AddTo adds the histogram's counts into m, bucket by bucket (a report
// summing many user-days' histograms).
func (h Hist) AddTo(m map[int]int64) {
	for i := 0; i+1 < len(h); i += 2 {
		m[int(h[i])] += h[i+1]
	}
}

// histOf builds a Hist from values.
func histOf(values []int64) Hist {
	if len(values) == 0 {
		return nil
	}
	counts := map[int]int64{}
	top := 0
	for _, v := range values {
		b := Bucket(v)
		counts[b]++
		top = max(top, b)
	}
	h := make(Hist, 0, 2*len(counts))
	for b := 0; b <= top; b++ {
		if c := counts[b]; c > 0 {
			h = append(h, int64(b), c)
		}
	}
	return h
}
