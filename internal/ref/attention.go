package ref

import "math"

// EmbeddingBackward sums the rows of dy [n, cols] by index into a table
// [vocab, cols]; indices outside [0, vocab) add to no row.
func EmbeddingBackward(idx []int32, dy []float32, vocab, cols int) []float64 {
	out := make([]float64, vocab*cols)
	for i, v := range idx {
		if v < 0 || int(v) >= vocab {
			continue
		}
		for c := range cols {
			out[int(v)*cols+c] += float64(dy[i*cols+c])
		}
	}
	return out
}

// Attention is causal self-attention over qkv [batch*t, 3*c], q | k | v
// along the last axis, head h in columns h*hd..(h+1)*hd of each, as
// nanoGPT's c_attn output.
type Attention struct {
	Batch, T, Heads, C int
	Scale              float64
	// Hidden, when set, hides key k from query q in batch b where it is
	// true, in place of the causal rule (a key after its query hidden).
	Hidden func(b, q, k int) bool
}

// at returns element (b, t, part, h, d) of qkv: part 0 is q, 1 k, 2 v.
func (a Attention) at(qkv []float64, b, t, part, h, d int) float64 {
	hd := a.C / a.Heads
	return qkv[(b*a.T+t)*3*a.C+part*a.C+h*hd+d]
}

// probs returns the attention probabilities of query row t of head h in
// batch b over the keys it sees (0..t, causal; a hidden one gets 0), and
// the row's log-sum-exp.
func (a Attention) probs(qkv []float64, b, h, t int) ([]float64, float64) {
	hd := a.C / a.Heads
	keys := t + 1
	if a.Hidden != nil {
		keys = a.T
	}
	s := make([]float64, keys)
	m := math.Inf(-1)
	for j := range s {
		if a.Hidden != nil && a.Hidden(b, t, j) {
			s[j] = math.Inf(-1)
			continue
		}
		for d := range hd {
			s[j] += a.at(qkv, b, t, 0, h, d) * a.at(qkv, b, j, 1, h, d)
		}
		s[j] *= a.Scale
		m = math.Max(m, s[j])
	}
	sum := 0.0
	for j := range s {
		s[j] = math.Exp(s[j] - m)
		sum += s[j]
	}
	for j := range s {
		s[j] /= sum
	}
	return s, m + math.Log(sum)
}

// Forward returns y [batch*t, c] (heads merged) and lse [batch, heads, t].
func (a Attention) Forward(qkv []float64) (y, lse []float64) {
	hd := a.C / a.Heads
	y = make([]float64, a.Batch*a.T*a.C)
	lse = make([]float64, a.Batch*a.Heads*a.T)
	for b := range a.Batch {
		for h := range a.Heads {
			for t := range a.T {
				p, l := a.probs(qkv, b, h, t)
				lse[(b*a.Heads+h)*a.T+t] = l
				for d := range hd {
					v := 0.0
					for j, pj := range p {
						v += pj * a.at(qkv, b, j, 2, h, d)
					}
					y[(b*a.T+t)*a.C+h*hd+d] = v
				}
			}
		}
	}
	return y, lse
}

// Backward returns dqkv, qkv's shape, from dy [batch*t, c].
func (a Attention) Backward(qkv, dy []float64) []float64 {
	hd := a.C / a.Heads
	dq := make([]float64, len(qkv))
	for b := range a.Batch {
		for h := range a.Heads {
			for t := range a.T {
				p, _ := a.probs(qkv, b, h, t)
				row := (b*a.T + t) * a.C
				// dp[j] = dy_t . v_j; ds[j] = p[j] (dp[j] - sum_i p[i] dp[i]).
				dp := make([]float64, len(p))
				dot := 0.0
				for j := range p {
					for d := range hd {
						dp[j] += dy[row+h*hd+d] * a.at(qkv, b, j, 2, h, d)
					}
					dot += p[j] * dp[j]
				}
				for j, pj := range p {
					ds := pj * (dp[j] - dot) * a.Scale
					for d := range hd {
						qi := (b*a.T+t)*3*a.C + h*hd + d
						ki := (b*a.T+j)*3*a.C + a.C + h*hd + d
						dq[qi] += ds * qkv[ki]
						dq[ki] += ds * qkv[qi]
						dq[ki+a.C] += pj * dy[row+h*hd+d]
					}
				}
			}
		}
	}
	return dq
}
