package nn

import (
	"slices"

	"github.com/vkamp/vkamp/tensor"
)

// Narrow's gradients, gathered. A var cut into many slices (an RNN's input
// products, one per time step; q, k and v from one projection) would get
// from each slice's rule a gradient of its full shape, zeros but for the
// slice, and the engine would add them up: work growing with the square
// of the count. Backward instead keeps each slice's gradient as a slab of
// the var's and, when the var's gradient is needed, joins the slabs with
// zeros between them in one Concat: the var's size once, whatever the
// count.

// slab is the gradient of elements [start, start+length) of a var along
// axis.
type slab struct {
	axis, start, length int
	g                   *tensor.Tensor
}

// addSlab records dy, the gradient of the Narrow node n, as a slab of its
// input's gradient.
func (g *Graph) addSlab(n *node, dy *tensor.Tensor) {
	in := n.inputs[0]
	if len(in.slabs) == 0 {
		g.slabbed = append(g.slabbed, in)
	}
	in.slabs = append(in.slabs, slab{axis: n.attr.ints[0], start: n.attr.ints[1], length: n.attr.ints[2], g: dy})
}

// settle adds v's slabs to its gradient.
func (g *Graph) settle(v *Var) error {
	if len(v.slabs) == 0 {
		return nil
	}
	gr := g.joinSlabs(v.Shape(), v.slabs)
	v.slabs = nil
	return g.accumulate(v, gr)
}

// joinSlabs is the gradient of a var of shape whose slabs are ss: slabs of
// one range are added, and slabs along one axis that do not overlap are
// joined with zeros between them; others are padded one by one and added.
func (g *Graph) joinSlabs(shape []int, ss []slab) *tensor.Tensor {
	ss = slices.Clone(ss)
	slices.SortStableFunc(ss, func(a, b slab) int {
		if a.axis != b.axis {
			return a.axis - b.axis
		}
		return a.start - b.start
	})
	// Slabs of one range add up first.
	merged := ss[:1]
	for _, s := range ss[1:] {
		last := &merged[len(merged)-1]
		if s.axis == last.axis && s.start == last.start && s.length == last.length {
			last.g = g.keep(tensor.Add(last.g, s.g, last.g.DType()))
			continue
		}
		merged = append(merged, s)
	}
	disjoint := true
	for i := 1; i < len(merged); i++ {
		a, b := merged[i-1], merged[i]
		disjoint = disjoint && a.axis == b.axis && a.start+a.length <= b.start
	}
	if !disjoint {
		var sum *tensor.Tensor
		for _, s := range merged {
			full := g.joinSlabs(shape, []slab{s})
			if sum == nil {
				sum = full
			} else {
				sum = g.keep(tensor.Add(sum, full, sum.DType()))
			}
		}
		return sum
	}
	ax, dt := merged[0].axis, merged[0].g.DType()
	var parts []*tensor.Tensor
	zeros := func(k int) {
		s := slices.Clone(shape)
		s[ax] = k
		parts = append(parts, g.keep(tensor.Zeros(g.dev, dt, s...)))
	}
	at := 0
	for _, s := range merged {
		if s.start > at {
			zeros(s.start - at)
		}
		parts = append(parts, s.g)
		at = s.start + s.length
	}
	if at < shape[ax] {
		zeros(shape[ax] - at)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return g.keep(tensor.Concat(ax, parts...))
}
