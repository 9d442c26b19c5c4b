package tensor_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
)

// TestAdadeltaStep: four steps against torch.optim.Adadelta's formulas in
// float64, the third skipped on the device by its flag (nothing changes,
// not the averages, not the count).
func TestAdadeltaStep(t *testing.T) {
	for _, c := range []tensor.AdadeltaConfig{
		{LR: 1, Rho: 0.9, Eps: 1e-6},
		{LR: 0.5, Rho: 0.8, Eps: 1e-4, WeightDecay: 0.1},
	} {
		t.Run(fmt.Sprintf("%+v", c), func(t *testing.T) {
			d := devtest.Open(t)
			r := newOptRig(t, d, 2)
			sq, acc := make([][]float64, len(r.w)), make([][]float64, len(r.w))
			for i := range r.w {
				sq[i], acc[i] = make([]float64, len(r.w[i])), make([]float64, len(r.w[i]))
			}
			set, _ := opInput(t, d, []float32{1}, tensor.Float32, 1)
			clear, _ := opInput(t, d, []float32{0}, tensor.Float32, 1)
			for s := range 4 {
				gs := r.setGrads(t, s)
				skip := s == 2
				flag := clear
				if skip {
					flag = set
				}
				require.NoError(t, r.st.AdadeltaStep(c, flag))
				if skip {
					continue
				}
				for i := range r.w {
					ref.Adadelta64(r.w[i], gs[i], sq[i], acc[i], float64(c.LR), float64(c.Rho), float64(c.Eps), float64(c.WeightDecay))
				}
			}
			r.check(t, "Adadelta")
			for m, want := range [][][]float64{sq, acc} {
				for i, mt := range r.st.Moments(m) {
					scale := make([]float64, len(want[i]))
					for j := range scale {
						scale[j] = math.Abs(want[i][j]) + 1e-6
					}
					ref.Check(t, fmt.Sprintf("moment %d of parameter %d", m, i), opRead(t, mt), want[i], scale, 1e-5)
				}
			}
			n, err := r.st.Steps()
			require.NoError(t, err)
			require.Equal(t, 3, n, "steps taken, the skipped one not counted")
		})
	}
}
