package gomaxprocs_test

import (
	"runtime"
	"testing"

	"github.com/commonly/runtime/shared/gomaxprocs"
)

func TestSequential(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })

	for _, c := range []struct {
		name string
		env  string
		set  int // GOMAXPROCS as the runtime had applied it from env
		want int
	}{
		{"unset: one P", "", 3, 1},
		{"set: the environment wins", "3", 3, 3},
		{"set to 1 explicitly", "1", 1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			runtime.GOMAXPROCS(c.set)
			got := gomaxprocs.Sequential(func(k string) string {
				if k == gomaxprocs.Env {
					return c.env
				}
				return ""
			})
			if got != c.want || runtime.GOMAXPROCS(0) != c.want {
				t.Errorf("Sequential = %d, GOMAXPROCS now %d; want %d", got, runtime.GOMAXPROCS(0), c.want)
			}
		})
	}
}
