package tensor_test

import (
	"math"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
)

// TestScaleItem checks that the copied scale is Scale of a Float32 1, bit
// for bit, from a fresh state (ScaleItem places it) and after Scale.
func TestScaleItem(t *testing.T) {
	d := devtest.Open(t)
	for _, scale := range []float64{65536, 3, 0x1p-100, math.MaxFloat32} {
		s := tensor.NewLossScale(scale, 0)
		item := s.ScaleItem(d)
		one := tensor.Full(d, tensor.Float32, 1, 1)
		want := s.Scale(one)
		a, err := item.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		b, err := want.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		if len(a) != 1 || math.Float32bits(a[0]) != math.Float32bits(b[0]) || a[0] != float32(scale) {
			t.Errorf("scale %g: ScaleItem %v, Scale of 1 %v", scale, a, b)
		}
		item.Release()
		one.Release()
		want.Release()
	}
}
