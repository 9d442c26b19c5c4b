package nn_test

import (
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
)

// TestAMPCastsLeftOut checks the casts an AMP step leaves out against the
// ones it replaces, bit for bit: the cross-entropy of 16-bit logits (read
// widened by LogSoftmax, its gradient rounded once by the backward kernel)
// and the cast back of a parameter's 16-bit gradient (widened by
// Accumulate), against the explicit casts of the tensor package. The
// logits are large enough that the 16-bit roundings matter, and the seed is
// a loss scale, as the scaler's.
func TestAMPCastsLeftOut(t *testing.T) {
	d := devtest.Open(t)
	const rows, cols = 37, 11 // odd: a half word at the end
	vals := ref.Rand(rows*cols, 7)
	for i := range vals {
		vals[i] *= 9
	}
	labels := make([]int32, rows)
	for i := range labels {
		labels[i] = int32(i*5) % cols
	}
	y := tLabels(t, d, labels...)
	for _, dt := range []tensor.DType{tensor.Float16, tensor.BFloat16} {
		t.Run(dt.String(), func(t *testing.T) {
			p := tParam(t, d, "logits", vals, rows, cols)
			g := nn.NewGraph(d, nn.Options{Autocast: dt})
			defer g.Release()
			loss := g.CrossEntropyLoss(g.Cast(g.Param(p), dt), y, nn.Mean)
			if err := g.Backward(loss, tensor.Full(d, tensor.Float32, 1024, 1)); err != nil {
				t.Fatal(err)
			}

			var s tensor.Scope
			defer s.Release()
			low := s.Track(tensor.Cast(p.Value, dt))
			logp := s.Track(tensor.LogSoftmax(s.Track(tensor.Cast(low, tensor.Float32))))
			want := s.Track(tensor.Mean(s.Track(tensor.NLL(logp, y))))
			seed := s.Track(tensor.Full(d, tensor.Float32, 1024, 1))
			dl := s.Track(tensor.CrossEntropyBackward(logp, y, seed, 1/float32(rows)))
			dw := s.Track(tensor.Cast(s.Track(tensor.Cast(dl, dt)), tensor.Float32))
			tSameBits(t, "loss", tRead(t, loss.Value()), tRead(t, want))
			tSameBits(t, "gradient", tRead(t, p.Grad), tRead(t, dw))
			// The 16-bit rounding must show, else the test could not tell
			// a gradient left in fp32 from a rounded one.
			rounded := 0
			got, low16 := tRead(t, dl), tRead(t, dw)
			for i, v := range got {
				if v != low16[i] {
					rounded++
				}
			}
			if rounded == 0 {
				t.Fatal("no gradient changed in the 16-bit rounding: the test checks nothing")
			}
		})
	}
}
