package ref

import "math"

// ClipNorm is PyTorch's clip_grad_norm_ in float64: the total L2 norm of
// every element of xs, and xs multiplied by min(1, maxNorm/(norm+eps)),
// NaN staying NaN (an infinite norm multiplies by 0, so inf becomes NaN).
func ClipNorm(xs [][]float32, maxNorm, eps float64) (norm float64, out [][]float64) {
	var s float64
	for _, x := range xs {
		for _, v := range x {
			s += float64(v) * float64(v)
		}
	}
	norm = math.Sqrt(s)
	coef := maxNorm / (norm + eps)
	if !math.IsNaN(coef) {
		coef = math.Min(coef, 1)
	}
	for _, x := range xs {
		o := make([]float64, len(x))
		for i, v := range x {
			o[i] = float64(v)
			if coef != 1 {
				o[i] *= coef
			}
		}
		out = append(out, o)
	}
	return norm, out
}

// ClampValues clamps every element of x to [-clip, clip], leaving NaN and
// infinities as they are (vkamp's clip by value never hides an overflow).
func ClampValues(x []float32, clip float64) []float64 {
	o := make([]float64, len(x))
	for i, v := range x {
		w := float64(v)
		if !math.IsNaN(w) && !math.IsInf(w, 0) {
			w = math.Max(-clip, math.Min(clip, w))
		}
		o[i] = w
	}
	return o
}
