package tensor_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// halfShapes: an odd count (the copy's last word half padding), one over a
// chunk of the table with an odd tail, and one without a copy.
var halfShapes = [][]int{{7, 5}, {8193}, {3}}

// TestAdamHalfCopies: an Adam step with half copies leaves the weights and
// moments bit for bit as one without, and each copy equals Cast of its
// weight; a skipped step writes neither; a parameter without a copy and a
// frozen one are left alone; the step stays two dispatches.
func TestAdamHalfCopies(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Float16, tensor.BFloat16} {
		for _, det := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/deterministic=%t", dt, det), func(t *testing.T) {
				d := devtest.Open(t, vk.Options{Deterministic: det})
				c := tensor.AdamConfig{LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1}
				mk := func() (vals, grads []*tensor.Tensor, st *tensor.OptimizerState) {
					for i, shape := range halfShapes {
						v, _ := opRand(t, d, uint64(40+i), 1, tensor.Float32, shape...)
						g := tensor.Zeros(d, tensor.Float32, shape...)
						t.Cleanup(g.Release)
						vals, grads = append(vals, v), append(grads, g)
					}
					st, err := tensor.NewOptimizerState(vals, grads, 2)
					require.NoError(t, err)
					t.Cleanup(func() { st.Close() })
					return vals, grads, st
				}
				vals, grads, st := mk()
				plain, plainGrads, plainSt := mk()
				var halves []*tensor.Tensor
				for i := range 2 {
					h := tensor.Zeros(d, dt, halfShapes[i]...)
					t.Cleanup(h.Release)
					st.SetHalfCopy(i, h)
					halves = append(halves, h)
				}
				require.Nil(t, st.HalfCopy(2))
				setGrads := func(s int) {
					for i := range grads {
						b := optBytes(ref.Rand(grads[i].Len(), uint64(100*s+i)))
						for _, dst := range []*tensor.Tensor{grads[i], plainGrads[i]} {
							require.NoError(t, dst.SetBytes(b))
						}
					}
				}
				same := func(what string) {
					t.Helper()
					for i := range vals {
						require.Equal(t, opBits(opRead(t, plain[i])), opBits(opRead(t, vals[i])), "%s: weight %d", what, i)
					}
					for m := range 2 {
						for i, x := range st.Moments(m) {
							require.Equal(t, opBits(opRead(t, plainSt.Moments(m)[i])), opBits(opRead(t, x)), "%s: moment %d of %d", what, m, i)
						}
					}
					for i, h := range halves {
						want := tensor.Cast(vals[i], dt)
						wb, err := want.Bytes()
						require.NoError(t, err)
						want.Release()
						hb, err := h.Bytes()
						require.NoError(t, err)
						require.Equal(t, wb, hb, "%s: half copy %d", what, i)
					}
				}
				for s := 1; s <= 2; s++ {
					setGrads(s)
					require.NoError(t, st.AdamStep(c, nil))
					require.NoError(t, plainSt.AdamStep(c, nil))
				}
				same("two steps")

				setGrads(3)
				skip, _ := opInput(t, d, []float32{1}, tensor.Float32, 1)
				require.NoError(t, st.AdamStep(c, skip))
				same("skipped step")

				st.SetFrozen(0, true)
				plainSt.SetFrozen(0, true)
				require.NoError(t, d.Wait())
				before := d.Stats()
				require.NoError(t, st.AdamStep(c, nil))
				require.Equal(t, uint64(2), d.Stats().Dispatches-before.Dispatches, "dispatches of a step with half copies")
				require.NoError(t, plainSt.AdamStep(c, nil))
				same("a frozen parameter")

				st.SetHalfCopy(1, nil)
				st.SetHalfCopy(0, nil)
				require.Nil(t, st.HalfCopy(0))
			})
		}
	}
}

func TestAdamHalfCopyMisuse(t *testing.T) {
	d := devtest.Open(t)
	v, _ := opRand(t, d, 1, 1, tensor.Float32, 4)
	g := tensor.Zeros(d, tensor.Float32, 4)
	t.Cleanup(g.Release)
	st, err := tensor.NewOptimizerState([]*tensor.Tensor{v}, []*tensor.Tensor{g}, 2)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	opPanics[*tensor.DTypeError](t, "fp32 copy", func() { st.SetHalfCopy(0, g) }, "SetHalfCopy")
	h := tensor.Zeros(d, tensor.Float16, 5)
	t.Cleanup(h.Release)
	opPanics[*tensor.ShapeError](t, "shape", func() { st.SetHalfCopy(0, h) }, "SetHalfCopy")
	h4 := tensor.Zeros(d, tensor.Float16, 4)
	t.Cleanup(h4.Release)
	st.SetHalfCopy(0, h4)
	opPanics[*tensor.UsageError](t, "SGD", func() { st.SGDStep(tensor.SGDConfig{LR: 0.1}, nil) }, "SGDStep", "half copies")
}
