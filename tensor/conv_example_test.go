package tensor_test

import (
	"fmt"

	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// A 2x2 box filter over a 3x3 image, padded by one pixel, then a 2x2 max
// pooling with its argmax.
func ExampleConv2d() {
	d, err := vk.Open(vk.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	var s tensor.Scope
	defer s.Release()
	x := s.Track(tensor.FromFloat32(d, []float32{1, 2, 3, 4, 5, 6, 7, 8, 9}, 1, 1, 3, 3))
	w := s.Track(tensor.Full(d, tensor.Float32, 1, 1, 1, 2, 2))
	y := s.Track(tensor.Conv2d(x, w, nil, tensor.Conv2dOpts{Padding: [2]int{1, 1}}))
	v, err := y.Float32s()
	fmt.Println(y, v, err)
	m, arg := tensor.MaxPool2d(y, [2]int{2, 2}, [2]int{}, [2]int{})
	s.Track(m)
	s.Track(arg)
	mv, _ := m.Float32s()
	av, err := arg.Int32s()
	fmt.Println(mv, av, err)
	// Output:
	// Tensor(float32[1 1 4 4]) [1 3 5 3 5 12 16 9 11 24 28 15 7 15 17 9] <nil>
	// [12 16 24 28] [5 6 9 10] <nil>
}
