package ref

import "math"

// Gemm is the float64 reference of tensor.MatMul over Batch batches:
//
//	Out = Alpha·op(A)·op(B) + Beta·C + Bias
//
// A holds Batch row-major [M, K] matrices ([K, M] with TransA); B holds Batch
// [K, N] matrices ([N, K] with TransB), or one when SharedB. C (Batch x
// [M, N]) and Bias ([N]) may be nil. Alpha is used as given (0 gives 0).
type Gemm struct {
	Batch, M, N, K int
	TransA, TransB bool
	SharedB        bool
	Alpha, Beta    float64
	A, B, C, Bias  []float32
}

// Run returns the result and, for each element, the scale of its rounding
// error for Check: |Alpha|·Σ_k |a_ik·b_kj| + |Beta·c| + |bias|. Infinities
// and NaNs propagate as in IEEE arithmetic; C is not read when Beta is 0.
func (g Gemm) Run() (want, scale []float64) {
	mn := g.M * g.N
	want = make([]float64, g.Batch*mn)
	scale = make([]float64, g.Batch*mn)
	for bt := 0; bt < g.Batch; bt++ {
		a := g.A[bt*g.M*g.K:]
		b := g.B
		if !g.SharedB {
			b = g.B[bt*g.K*g.N:]
		}
		for i := 0; i < g.M; i++ {
			for j := 0; j < g.N; j++ {
				var s, abs float64
				for k := 0; k < g.K; k++ {
					x := float64(a[i*g.K+k])
					if g.TransA {
						x = float64(a[k*g.M+i])
					}
					y := float64(b[k*g.N+j])
					if g.TransB {
						y = float64(b[j*g.K+k])
					}
					s += x * y
					abs += math.Abs(x * y)
				}
				v, sc := g.Alpha*s, math.Abs(g.Alpha)*abs
				e := bt*mn + i*g.N + j
				if g.C != nil && g.Beta != 0 {
					bc := g.Beta * float64(g.C[e])
					v += bc
					sc += math.Abs(bc)
				}
				if g.Bias != nil {
					v += float64(g.Bias[j])
					sc += math.Abs(float64(g.Bias[j]))
				}
				want[e], scale[e] = v, sc
			}
		}
	}
	return want, scale
}
