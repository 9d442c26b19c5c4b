package amp_test

import (
	"fmt"

	"github.com/vkamp/vkamp/amp"
	"github.com/vkamp/vkamp/tensor"
)

// Which dtype ops run in under autocast, and in a nested region that turns
// it off.
func Example() {
	r := amp.New(true, tensor.Float16)
	fmt.Println(r.OpDType(tensor.OpMatMul, tensor.Float32, tensor.Float32))
	fmt.Println(r.OpDType(tensor.OpSoftmax, tensor.Float16))
	fmt.Println(r.OpDType(tensor.OpAdd, tensor.Float16, tensor.Float32))
	inner := r.Enter(false, tensor.Float16)
	fmt.Println(inner.OpDType(tensor.OpMatMul, tensor.Float32, tensor.Float32))
	r = inner.Exit()
	fmt.Println(r.Enabled())
	// Output:
	// float16
	// float32
	// float32
	// float32
	// true
}
