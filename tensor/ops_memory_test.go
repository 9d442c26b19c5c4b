package tensor_test

import (
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// TestOpsMemorySteady runs a small training loop, forward and backward with
// one Scope per step, and checks that device memory and live buffers do not
// grow between step 100 and the last step.
func TestOpsMemorySteady(t *testing.T) {
	steps := 10_000
	if testing.Short() {
		steps = 1_000 // the race detector slows recording about tenfold
	}
	d := devtest.Open(t)
	const rows, cols, lr = 4, 8, 0.05
	x, _ := opRand(t, d, 1, 1, tensor.Float16, rows, cols)
	w := tensor.Full(d, tensor.Float32, 0.5, rows, cols)
	b := tensor.Full(d, tensor.Float32, 0.1, cols)
	dy := tensor.Full(d, tensor.Float16, 1.0/(rows*cols), rows, cols) // d Mean(y) / dy
	defer func() { w.Release(); b.Release(); dy.Release() }()

	var first, last float32
	var at100 vk.Stats
	for step := 1; step <= steps; step++ {
		var sc tensor.Scope
		h := sc.Track(tensor.Mul(x, w, tensor.Float16))
		z := sc.Track(tensor.AddBias(h, b, tensor.Float16))
		y := sc.Track(tensor.ReLU(z, tensor.Float16))
		loss := sc.Track(tensor.Mean(y))
		dz := sc.Track(tensor.ReLUBackward(dy, z, tensor.Float32))
		db := sc.Track(tensor.SumAxis(dz, 0))
		dw := sc.Track(tensor.Mul(dz, x, tensor.Float32))
		// The update makes new parameters; the old ones go with the step.
		sc.Track(w)
		sc.Track(b)
		w, b = tensor.Axpy(-lr, dw, w, tensor.Float32), tensor.Axpy(-lr, db, b, tensor.Float32)
		if step == 1 || step == steps {
			v, err := loss.Item()
			if err != nil {
				t.Fatal(err)
			}
			if step == 1 {
				first = v
			}
			last = v
		}
		sc.Release()
		if step == 100 || step == steps {
			if err := d.Wait(); err != nil {
				t.Fatal(err)
			}
			if step == 100 {
				at100 = d.Stats()
			}
		}
	}
	end := d.Stats()
	// BufferBytes too: a small leak stays inside one memory block.
	if end.DeviceBytes != at100.DeviceBytes || end.LiveBuffers != at100.LiveBuffers || end.BufferBytes != at100.BufferBytes {
		t.Errorf("after step 100: %d device bytes, %d live buffers of %d bytes; after step %d: %d, %d, %d",
			at100.DeviceBytes, at100.LiveBuffers, at100.BufferBytes, steps, end.DeviceBytes, end.LiveBuffers, end.BufferBytes)
	}
	if !(last < first) {
		t.Errorf("loss went from %g to %g: the loop does not train", first, last)
	}
	t.Logf("%d steps, %d dispatches, %d submits; loss %g -> %g; %d live buffers, %d device bytes",
		steps, end.Dispatches, end.Submits, first, last, end.LiveBuffers, end.DeviceBytes)
}
