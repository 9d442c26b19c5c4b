package trainer

import (
	"math"
	"testing"

	"github.com/vkamp/vkamp/mnist"
)

// TestNormalized: the CNN's pixels are examples/mnist's (p - 0.1307) /
// 0.3081, and the set they came from is left as it was.
func TestNormalized(t *testing.T) {
	s := &mnist.Set{Images: []float32{0, 1, 0.5}, Labels: []uint8{7}, N: 1, Rows: 1, Cols: 3}
	n := normalized(s)
	for i, want := range []float64{-0.1307 / 0.3081, (1 - 0.1307) / 0.3081, (0.5 - 0.1307) / 0.3081} {
		if math.Abs(float64(n.Images[i])-want) > 1e-6 {
			t.Errorf("pixel %d: %g, want %g", i, n.Images[i], want)
		}
	}
	if s.Images[1] != 1 || n.N != 1 || n.Labels[0] != 7 {
		t.Errorf("the source set changed (%v) or the copy lost its labels (%v)", s.Images, n.Labels)
	}
}
