package mnist_test

import (
	"fmt"
	"log"

	"github.com/vkamp/vkamp/mnist"
)

func Example() {
	train, test, err := mnist.Load("../testdata/mnist")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("train: %d digits of %dx%d\n", train.N, train.Rows, train.Cols)
	fmt.Printf("test: %d digits, the first labelled %d\n", test.N, test.Labels[0])

	// Batches of 100: pixels for the input, class indices for the loss.
	x := make([]float32, 100*train.Rows*train.Cols)
	y := make([]int32, 100)
	train.Batch(0, 100, x, y)
	fmt.Printf("%d batches; the first starts with labels %v\n", train.N/100, y[:3])
	// Output:
	// train: 8000 digits of 28x28
	// test: 2000 digits, the first labelled 0
	// 80 batches; the first starts with labels [0 7 3]
}
