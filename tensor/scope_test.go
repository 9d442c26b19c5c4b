package tensor_test

import (
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
)

// released reports whether t was released: any use of it panics then.
func released(t *tensor.Tensor) (gone bool) {
	defer func() { gone = recover() != nil }()
	t.Zero()
	return false
}

// TestScopeAfterRelease tracks more tensors than a scope keeps in itself,
// releases them, and tracks more in the same scope: each Release frees what
// was tracked since the last, and nothing else.
func TestScopeAfterRelease(t *testing.T) {
	d := devtest.Open(t)
	var sc tensor.Scope
	var first, second []*tensor.Tensor
	for range 40 {
		first = append(first, sc.Track(tensor.Zeros(d, tensor.Float32, 4)))
	}
	sc.Release()
	for range 3 {
		second = append(second, sc.Track(tensor.Zeros(d, tensor.Float32, 4)))
	}
	for i, x := range first {
		if !released(x) {
			t.Fatalf("first batch: tensor %d not released", i)
		}
	}
	if n := sc.Len(); n != 3 {
		t.Fatalf("scope tracks %d tensors after Release and 3 more, want 3", n)
	}
	for i, x := range second {
		if released(x) {
			t.Fatalf("second batch: tensor %d released before its Release", i)
		}
	}
	sc.Release()
	for i, x := range second {
		if !released(x) {
			t.Fatalf("second batch: tensor %d not released", i)
		}
	}
}
