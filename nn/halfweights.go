package nn

import (
	"fmt"

	"github.com/vkamp/vkamp/tensor"
)

// Half weights: under autocast every step casts each weight to fp16 (or
// bf16) before the forward, one cast kernel per weight. An Adam that keeps
// half weights (Adam.KeepHalfWeights) writes those casts itself, in the
// same kernel as the update (tensor.OptimizerState.SetHalfCopy), and the
// graph takes the weight's copy instead of casting it. The copy is the
// cast of the value bit for bit; the graph uses it only while nothing but
// that Adam wrote the value since (Param.Set, another optimizer and
// LoadCheckpoint mark it stale, and a replaced Value is noticed).

// halfWeight is a parameter's half copy, and the dtype autocast asked for.
type halfWeight struct {
	want  tensor.DType   // the dtype autocast last cast the value to (Float32: none yet)
	t     *tensor.Tensor // the copy, owned by the Adam that writes it (owner)
	owner *Adam
	of    *tensor.Tensor // the Value it is the cast of
	fresh bool           // t is the cast of of, and nothing else wrote of since
}

// halfFor returns p's copy in dtype dt for a graph, nil unless it is fresh,
// and records that autocast casts p to dt.
func (p *Param) halfFor(dt tensor.DType) *tensor.Tensor {
	if p.half == nil {
		p.half = &halfWeight{}
	}
	h := p.half
	h.want = dt
	if h.fresh && h.of == p.Value && h.t != nil && h.t.DType() == dt {
		return h.t
	}
	return nil
}

// staleHalf marks p's copy stale: its value was written by other means.
func (p *Param) staleHalf() {
	if p.half != nil {
		p.half.fresh = false
	}
}

// KeepHalfWeights makes each following step also write, for every
// parameter that autocast has cast to fp16 or bf16, the updated value in
// that dtype, so that the next forward under autocast takes it instead of
// casting the weight (one kernel per weight and step saved). The first
// step after a parameter's first cast, or after its value was written
// other than by this optimizer, casts it once more. A parameter's value
// must then be written only through Param.Set, an optimizer, LoadCheckpoint
// or by replacing Value: a write into Value's memory by other means leaves
// autocast the copy of the old value until the next step. Off releases the
// copies.
func (a *Adam) KeepHalfWeights(on bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.keepHalf = on
	if !on {
		a.dropHalves()
	}
}

// prepareHalves gives each parameter that autocast casts a copy in the
// state, the cast of its value unless the copy is fresh, so that a step
// skipped on the device leaves a true copy. It marks the copies stale until
// the step is recorded (markHalves).
func (a *Adam) prepareHalves() error {
	first := 0
	for _, pt := range a.parts {
		var dt tensor.DType // one dtype per state: the first parameter's that autocast casts
		for j := range pt.n {
			if h := a.params[first+j].half; h != nil && h.want != tensor.Float32 {
				dt = h.want
				break
			}
		}
		for j := range pt.n {
			if cur := pt.state.HalfCopy(j); cur != nil && cur.DType() != dt {
				pt.state.SetHalfCopy(j, nil) // autocast changed dtype
				cur.Release()
			}
		}
		for j := range pt.n {
			p := a.params[first+j]
			h, cur := p.half, pt.state.HalfCopy(j)
			if h == nil || h.want == tensor.Float32 || h.want != dt {
				continue
			}
			if h.fresh && h.owner == a && h.t == cur && cur != nil && h.of == p.Value && cur.DType() == dt {
				continue
			}
			c := tensor.Cast(p.Value, dt)
			if err := c.Err(); err != nil {
				c.Release()
				return fmt.Errorf("nn: adam: half copy of %s: %w", p.Name, err)
			}
			pt.state.SetHalfCopy(j, c)
			if cur != nil {
				cur.Release()
			}
			h.t, h.owner, h.of = c, a, p.Value
		}
		first += pt.n
	}
	for _, p := range a.params {
		if p.half != nil && p.half.owner == a {
			p.half.fresh = false
		}
	}
	return nil
}

// markHalves marks the copies of a recorded step fresh.
func (a *Adam) markHalves() {
	first := 0
	for _, pt := range a.parts {
		for j := range pt.n {
			p := a.params[first+j]
			if h := p.half; h != nil && h.owner == a && h.t != nil && h.t == pt.state.HalfCopy(j) {
				h.fresh, h.of = true, p.Value
			}
		}
		first += pt.n
	}
}

// dropHalves releases the copies the optimizer keeps.
func (a *Adam) dropHalves() {
	if a.optimizer == nil {
		return
	}
	first := 0
	for _, pt := range a.parts {
		for j := range pt.n {
			if c := pt.state.HalfCopy(j); c != nil {
				pt.state.SetHalfCopy(j, nil)
				c.Release()
			}
			if h := a.params[first+j].half; h != nil && h.owner == a {
				h.t, h.owner, h.fresh = nil, nil, false
			}
		}
		first += pt.n
	}
}
