package tensor_test

import (
	"fmt"
	"math"

	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Broadcasting a row [3] against a column [2, 1], then an attention-style
// mask filled with -inf and a reduction over the last axis with keepdim.
func ExampleAdd_broadcast() {
	d, err := vk.Open(vk.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	var s tensor.Scope
	defer s.Release()
	col := s.Track(tensor.FromFloat32(d, []float32{10, 20}, 2, 1))
	row := s.Track(tensor.FromFloat32(d, []float32{1, 2, 3}, 3))
	sum := s.Track(tensor.Add(col, row, tensor.Float16))
	v, err := sum.Float32s()
	fmt.Println(sum, v, err)
	mask := s.Track(tensor.FromInt32(d, []int32{0, 0, 1}, 3))
	masked := s.Track(tensor.MaskedFill(sum, mask, float32(math.Inf(-1))))
	m := s.Track(tensor.MaxAxes(masked, []int{-1}, true))
	v, err = m.Float32s()
	fmt.Println(m, v, err)
	// Output:
	// Tensor(float16[2 3]) [11 12 13 21 22 23] <nil>
	// Tensor(float32[2 1]) [12 22] <nil>
}
