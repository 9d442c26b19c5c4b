package tensor_test

import (
	"errors"
	"fmt"

	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// An fp16 matrix product accumulated in fp32, then a row-wise softmax.
func Example() {
	d, err := vk.Open(vk.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	var s tensor.Scope
	defer s.Release()
	a := s.Track(tensor.FromFloat32(d, []float32{1, 2, 3, 4, 5, 6}, 2, 3))
	b := s.Track(tensor.FromFloat32(d, []float32{1, 0, 0, 1, 1, 1}, 3, 2))
	c := s.Track(tensor.MatMul(s.Track(tensor.Cast(a, tensor.Float16)), s.Track(tensor.Cast(b, tensor.Float16)),
		tensor.MatMulOpts{Out: tensor.Float16}))
	v, err := c.Float32s()
	fmt.Println(c, v, err)
	p, err := s.Track(tensor.Softmax(c)).Float32s()
	fmt.Printf("%.4f %v\n", p, err)
	// Output:
	// Tensor(float16[2 2]) [4 5 10 11] <nil>
	// [0.2689 0.7311 0.2689 0.7311] <nil>
}

// An embedding lookup: rows of a bf16 table picked by int32 indices. The
// out-of-range index 7 gives a row of NaN and raises the device's assert:
// the next read reports it, and the read after reads the rows.
func ExampleIndexSelect() {
	d, err := vk.Open(vk.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	var s tensor.Scope
	defer s.Release()
	table := s.Track(tensor.Cast(s.Track(tensor.FromFloat32(d, []float32{1, 2, 3, 4, 5, 6.01}, 3, 2)), tensor.BFloat16))
	idx := s.Track(tensor.FromInt32(d, []int32{2, 0, 7}, 3))
	rows := s.Track(tensor.IndexSelect(table, idx))
	_, err = rows.Float32s()
	fmt.Println(err, errors.Is(err, tensor.ErrBadIndex))
	v, err := rows.Float32s()
	fmt.Println(rows, v, err)
	// Output:
	// tensor: IndexSelect: device-side assert: row 2 has index 7, outside [0, 3) true
	// Tensor(bfloat16[3 2]) [5 6 1 2 NaN NaN] <nil>
}
