package jsonnum_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/vkamp/vkamp/tools/internal/jsonnum"
)

func TestFloat(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{{1.5, "1.5"}, {0, "0"}, {-2e-9, "-2e-9"}, {math.NaN(), "null"}, {math.Inf(1), "null"}, {math.Inf(-1), "null"}} {
		b, err := json.Marshal(struct {
			X jsonnum.Float `json:"x"`
		}{jsonnum.Float(c.v)})
		if err != nil || string(b) != `{"x":`+c.want+`}` {
			t.Errorf("%g: got %s, %v; want {\"x\":%s}", c.v, b, err, c.want)
		}
	}
}
