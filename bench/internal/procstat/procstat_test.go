package procstat

import "testing"

func TestCPUAndSelfAgree(t *testing.T) {
	total0, sys0 := CPU()
	u := Self()
	total1, sys1 := CPU()
	if total0 <= 0 || sys0 > total0 || sys1 > total1 {
		t.Errorf("CPU: total %v sys %v, then total %v sys %v", total0, sys0, total1, sys1)
	}
	if u.CPU < total0 || u.CPU > total1 || u.Sys < sys0 || u.Sys > sys1 {
		t.Errorf("Self %+v is not between %v/%v and %v/%v", u, total0, sys0, total1, sys1)
	}
	if u.PeakRSSKB <= 0 {
		t.Errorf("peak RSS %d KiB", u.PeakRSSKB)
	}
}
