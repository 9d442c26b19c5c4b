package tensor_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// bcOps are the broadcasting binary ops with their float64 references.
var bcOps = []struct {
	name string
	dev  func(a, b *tensor.Tensor, out tensor.DType) *tensor.Tensor
	f    func(a, b float64) float64
}{
	{"Add", tensor.Add, func(a, b float64) float64 { return a + b }},
	{"Sub", tensor.Sub, func(a, b float64) float64 { return a - b }},
	{"Mul", tensor.Mul, func(a, b float64) float64 { return a * b }},
	{"Div", tensor.Div, ref.Div},
	{"Equal", tensor.Equal, func(a, b float64) float64 {
		if a == b {
			return 1
		}
		return 0
	}},
}

// bcShapes are pairs that broadcast: a missing leading axis, 1s on either
// side, scalars, six axes that do not merge, and eight that merge to two.
var bcShapes = [][2][]int{
	{{2, 1, 3}, {4, 3}},
	{{5}, {2, 3, 5}},
	{{1}, {2, 3}},
	{{3, 4}, {1}},
	{{3, 1}, {1, 4}},
	{{2, 3, 4}, {2, 1, 4}},
	{{2, 1, 2, 1, 2, 1}, {1, 3, 1, 3, 1, 3}},
	{{1, 1, 1, 1, 1, 1, 2, 3}, {2, 1, 1, 1, 1, 1, 1, 3}},
	{{2, 3}, {2, 3}},
}

func TestBroadcast(t *testing.T) {
	d := devtest.Open(t)
	t.Run("Random", func(t *testing.T) { bcRandom(t, d) })
	t.Run("Specials", func(t *testing.T) { bcSpecials(t, d) })
	t.Run("Where", func(t *testing.T) { bcWhere(t, d) })
	t.Run("Expand", func(t *testing.T) { bcExpand(t, d) })
	t.Run("Panics", func(t *testing.T) { bcPanics(t, d) })
}

// bcExpand copies values exactly, specials included, into every dtype.
func bcExpand(t *testing.T, d *vk.Device) {
	var checks []opCheck
	n := len(opSpecials)
	for _, c := range bcFew {
		x, xv := opInput(t, d, opSpecials, c[0], n, 1)
		out := []int{2, n, 3}
		checks = append(checks, opWant(t, fmt.Sprintf("Expand(%s -> %s)", c[0], c[2]), tensor.Expand(x, c[2], out...), c[2], out,
			ref.Map(ref.Expand(xv, []int{n, 1}, out), c[2], func(v float64) float64 { return v }), nil, 0))
	}
	opRun(checks)
}

// bcFew are dtype combinations that give every dtype each role, for the
// cases that need not run all 27 (SwiftShader compiles each combination).
var bcFew = [][3]tensor.DType{
	{tensor.Float32, tensor.Float32, tensor.Float32},
	{tensor.Float16, tensor.BFloat16, tensor.Float16},
	{tensor.BFloat16, tensor.Float16, tensor.BFloat16},
}

// bcCombos runs all combinations for Add and Div on the first shapes, and
// bcFew for the rest.
func bcCombos(op string, si int) [][3]tensor.DType {
	if si < 2 && (op == "Add" || op == "Div") {
		return ewCombos(false)
	}
	return bcFew
}

func bcRandom(t *testing.T, d *vk.Device) {
	var checks []opCheck
	for oi, op := range bcOps {
		for si, sh := range bcShapes {
			for _, c := range bcCombos(op.name, si) {
				seed := uint64(100*oi + si)
				a, av := opRand(t, d, seed, 1, c[0], sh[0]...)
				b, bv := opRand(t, d, seed+7, 1, c[1], sh[1]...)
				if op.name == "Equal" { // make some equal: b takes a's first value
					bv[0] = av[0]
					b, bv = opInput(t, d, bv, c[1], sh[1]...)
				}
				out, _ := tensor.BroadcastShape(sh[0], sh[1])
				what := fmt.Sprintf("%s(%s%v, %s%v -> %s)", op.name, c[0], sh[0], c[1], sh[1], c[2])
				checks = append(checks, opWant(t, what, op.dev(a, b, c[2]), c[2], out,
					ref.Broadcast2(av, sh[0], bv, sh[1], out, c[2], op.f), nil, ref.Tol(c[2], 1)))
			}
		}
	}
	opRun(checks)
}

// bcSpecials pairs every special value with every other by broadcasting
// [n, 1] against [n].
func bcSpecials(t *testing.T, d *vk.Device) {
	n := len(opSpecials)
	var checks []opCheck
	for _, op := range bcOps {
		for _, c := range bcCombos(op.name, 0) {
			a, av := opInput(t, d, opSpecials, c[0], n, 1)
			b, bv := opInput(t, d, opSpecials, c[1], n)
			what := fmt.Sprintf("%s(%s, %s -> %s) specials", op.name, c[0], c[1], c[2])
			checks = append(checks, opWant(t, what, op.dev(a, b, c[2]), c[2], []int{n, n},
				ref.Broadcast2(av, []int{n, 1}, bv, []int{n}, []int{n, n}, c[2], op.f), nil, ref.Tol(c[2], 1)))
		}
	}
	opRun(checks)
}

func bcInts(t *testing.T, d *vk.Device, v []int32, shape ...int) *tensor.Tensor {
	x := tensor.FromInt32(d, v, shape...)
	if err := x.Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(x.Release)
	return x
}

func bcWhere(t *testing.T, d *vk.Device) {
	var checks []opCheck
	cond := []int32{1, 0, -3}
	for _, c := range bcFew {
		cd := bcInts(t, d, cond, 3, 1)
		a, av := opRand(t, d, 1, 1, c[0], 2, 1, 4)
		b, bv := opRand(t, d, 2, 1, c[1], 4)
		out := []int{2, 3, 4}
		what := fmt.Sprintf("Where(int32[3 1], %s[2 1 4], %s[4] -> %s)", c[0], c[1], c[2])
		checks = append(checks, opWant(t, what, tensor.Where(cd, a, b, c[2]), c[2], out,
			ref.Where(cond, []int{3, 1}, av, []int{2, 1, 4}, bv, []int{4}, out, c[2]), nil, 0))
		// MaskedFill: x[2 3 4] with mask[3 1]; the fill value rounds to x's dtype.
		x, xv := opRand(t, d, 3, 1, c[0], 2, 3, 4)
		fill := []float32{-0.3}
		what = fmt.Sprintf("MaskedFill(%s[2 3 4], int32[3 1])", c[0])
		checks = append(checks, opWant(t, what, tensor.MaskedFill(x, cd, -0.3), c[0], out,
			ref.Where(cond, []int{3, 1}, ref.RoundAll(fill, c[0]), []int{1}, xv, out, out, c[0]), nil, 0))
	}
	// Specials pass through untouched, and -inf fills (attention masks).
	x, xv := opInput(t, d, opSpecials, tensor.Float32, len(opSpecials))
	m := make([]int32, len(opSpecials))
	for i := range m {
		m[i] = int32(i % 2)
	}
	mk := bcInts(t, d, m, len(m))
	inf := float32(math.Inf(-1))
	checks = append(checks, opWant(t, "MaskedFill specials", tensor.MaskedFill(x, mk, inf), tensor.Float32, []int{len(m)},
		ref.Where(m, []int{len(m)}, []float32{inf}, []int{1}, xv, []int{len(m)}, []int{len(m)}, tensor.Float32), nil, 0))
	opRun(checks)
}

func bcPanics(t *testing.T, d *vk.Device) {
	a, _ := opRand(t, d, 1, 1, tensor.Float32, 2, 3)
	b, _ := opRand(t, d, 2, 1, tensor.Float16, 4, 3)
	ints := bcInts(t, d, []int32{1, 0, 1}, 3)
	for _, op := range bcOps {
		opPanics[*tensor.ShapeError](t, op.name, func() { op.dev(a, b, tensor.Float32) }, op.name, "[2 3]", "[4 3]", "broadcast")
		opPanics[*tensor.DTypeError](t, op.name+" int32", func() { op.dev(a, ints, tensor.Float32) }, op.name, "int32")
		opPanics[*tensor.DTypeError](t, op.name+" into int32", func() { op.dev(a, a, tensor.Int32) }, op.name, "int32")
	}
	opPanics[*tensor.ShapeError](t, "Expand", func() { tensor.Expand(a, tensor.Float32, 3) }, "Expand", "[2 3]", "[3]")
	seven1, _ := opRand(t, d, 3, 1, tensor.Float32, 2, 1, 2, 1, 2, 1, 2)
	seven2, _ := opRand(t, d, 4, 1, tensor.Float32, 1, 2, 1, 2, 1, 2, 1)
	opPanics[*tensor.UsageError](t, "seven dims", func() { tensor.Add(seven1, seven2, tensor.Float32) }, "Add", "7 dimensions")
	opPanics[*tensor.ShapeError](t, "Where shapes", func() { tensor.Where(ints, a, b, tensor.Float32) }, "Where", "[2 3]", "[4 3]")
	opPanics[*tensor.ShapeError](t, "Where cond shape", func() { tensor.Where(bcInts(t, d, []int32{1, 0}, 2), a, a, tensor.Float32) }, "Where", "[2]", "[2 3]")
	opPanics[*tensor.DTypeError](t, "Where float cond", func() { tensor.Where(a, a, a, tensor.Float32) }, "Where", "float32", "int32 condition")
	opPanics[*tensor.DTypeError](t, "Where int32 a", func() { tensor.Where(ints, ints, a, tensor.Float32) }, "Where", "int32")
	opPanics[*tensor.DTypeError](t, "MaskedFill float mask", func() { tensor.MaskedFill(a, a, 0) }, "MaskedFill", "int32 mask")
	opPanics[*tensor.ShapeError](t, "MaskedFill grows x", func() { tensor.MaskedFill(ints, bcInts(t, d, []int32{1, 0, 1, 1, 0, 1}, 2, 3), 0) }, "MaskedFill", "[3]", "[2 3]")
	opPanics[*tensor.DTypeError](t, "MaskedFill int32 x", func() { tensor.MaskedFill(ints, ints, 0) }, "MaskedFill", "int32")
}

func TestBroadcastShape(t *testing.T) {
	for i, c := range []struct {
		a, b, want []int
		ok         bool
	}{
		{[]int{2, 1, 3}, []int{4, 3}, []int{2, 4, 3}, true},
		{[]int{5}, []int{2, 3, 5}, []int{2, 3, 5}, true},
		{[]int{1}, []int{1}, []int{1}, true},
		{[]int{3}, []int{4}, nil, false},
		{[]int{2, 3}, []int{3, 3}, nil, false},
	} {
		got, ok := tensor.BroadcastShape(c.a, c.b)
		if ok != c.ok || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%d: BroadcastShape(%v, %v) = %v, %v; want %v, %v", i, c.a, c.b, got, ok, c.want, c.ok)
		}
	}
}
