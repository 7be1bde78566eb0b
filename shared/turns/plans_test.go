package turns

import "testing"

func TestParseLimits(t *testing.T) {
	cases := []struct {
		in      string
		free    int64
		pro     int64
		wantErr bool
	}{
		{DefaultLimits, 30, 200, false},
		{" pro=5 , free=1 ", 1, 5, false},
		{"free=0,pro=0", 0, 0, false},
		{"free=30", 0, 0, true},
		{"free=30,pro=200,team=9", 0, 0, true},
		{"free=-1,pro=2", 0, 0, true},
		{"free=30,free=31,pro=2", 0, 0, true},
		{"free30,pro=2", 0, 0, true},
		{"free=x,pro=2", 0, 0, true},
	}
	for _, c := range cases {
		l, err := ParseLimits(c.in)
		if (err != nil) != c.wantErr {
			t.Errorf("ParseLimits(%q) err = %v, wantErr %v", c.in, err, c.wantErr)
			continue
		}
		if err == nil && (l.For(PlanFree) != c.free || l.For(PlanPro) != c.pro) {
			t.Errorf("ParseLimits(%q) = %v", c.in, l)
		}
	}
}

func TestUnknownPlanIsFree(t *testing.T) {
	l, _ := ParseLimits(DefaultLimits)
	if got := l.For(""); got != 30 {
		t.Errorf("empty plan limit = %d, want 30", got)
	}
	if got := l.For("enterprise"); got != 30 {
		t.Errorf("unknown plan limit = %d, want 30", got)
	}
}
