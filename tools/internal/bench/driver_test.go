package bench

import (
	"math"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
)

// TestDriver runs the launch measurements on a short chain and checks that
// each is reported, in order, per dispatch, positive and beside its
// baseline; it asserts nothing about speed.
func TestDriver(t *testing.T) {
	d := devtest.Open(t)
	rs, err := Driver(d, 20, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != len(DriverNames) {
		t.Fatalf("%d results, want %d: %+v", len(rs), len(DriverNames), rs)
	}
	versus := map[string]string{"dispatch/driver-switch-us": "driver-us", "dispatch/vk-us": "driver-us", "dispatch/run-us": "vk-us"}
	for i, r := range rs {
		if r.Name != DriverNames[i] || r.Unit != "us per dispatch" || !(r.Value > 0) || math.IsInf(r.Value, 0) || r.Device == "" || r.Versus != versus[r.Name] {
			t.Errorf("result %d: %+v, want %s in us per dispatch, positive, versus %q", i, r, DriverNames[i], versus[r.Name])
		}
	}
	if _, err := Driver(d, 0, 2); err == nil {
		t.Error("no launches: no error")
	}
}
