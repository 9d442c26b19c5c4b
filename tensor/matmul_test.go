package tensor_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/quick"

	"github.com/x448/float16"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Helpers of the matmul tests carry an "mm" prefix so they cannot clash with
// other test files of package tensor_test.

const (
	mmF32  = tensor.Float32
	mmF16  = tensor.Float16
	mmBF16 = tensor.BFloat16
)

// mmCase is one MatMul problem.
type mmCase struct {
	batch          []int // leading dimensions of A, and of B unless sharedB
	m, n, k        int
	transA, transB bool
	da, db, out    tensor.DType
	sharedB        bool
	alpha, beta    float32
	dc             tensor.DType // C's dtype, when beta != 0
	bias           bool
	dbias          tensor.DType
}

func (c mmCase) String() string {
	s := fmt.Sprintf("%v%dx%dx%d", c.batch, c.m, c.n, c.k)
	if c.transA || c.transB {
		s += fmt.Sprintf("_T%v%v", mmB01(c.transA), mmB01(c.transB))
	}
	s += fmt.Sprintf("_%s%s%s", mmShort(c.da), mmShort(c.db), mmShort(c.out))
	if c.sharedB {
		s += "_sharedB"
	}
	if c.alpha != 0 {
		s += fmt.Sprintf("_a%g", c.alpha)
	}
	if c.beta != 0 {
		s += fmt.Sprintf("_b%g%s", c.beta, mmShort(c.dc))
	}
	if c.bias {
		s += "_bias" + mmShort(c.dbias)
	}
	return s
}

func mmB01(b bool) int {
	if b {
		return 1
	}
	return 0
}

func mmShort(d tensor.DType) string {
	return map[tensor.DType]string{mmF32: "32", mmF16: "16", mmBF16: "bf"}[d]
}

func mmNum(dims []int) int {
	n := 1
	for _, d := range dims {
		n *= d
	}
	return n
}

// mmUpload puts vals on d as dt (they must already be representable).
func mmUpload(t testing.TB, d *vk.Device, vals []float32, dt tensor.DType, shape ...int) *tensor.Tensor {
	t.Helper()
	var x *tensor.Tensor
	switch dt {
	case mmF16:
		h := make([]float16.Float16, len(vals))
		for i, v := range vals {
			h[i] = float16.Fromfloat32(v)
		}
		x = tensor.FromFloat16(d, h, shape...)
	case mmBF16:
		h := make([]uint16, len(vals))
		for i, v := range vals {
			h[i] = mmBF16Bits(v)
		}
		x = tensor.FromBFloat16(d, h, shape...)
	default:
		x = tensor.FromFloat32(d, vals, shape...)
	}
	if err := x.Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(x.Release)
	return x
}

// mmInputs are a case's operands, as held on the device (already rounded).
type mmInputs struct{ a, b, c, bias []float32 }

// mmRandom draws a case's operands in [-1, 1) from seed.
func mmRandom(c mmCase, seed uint64) mmInputs {
	nb := mmNum(c.batch)
	in := mmInputs{
		a: mmRoundAll(ref.Rand(nb*c.m*c.k, seed), c.da),
		b: mmRoundAll(ref.Rand(c.k*c.n*mmNumB(c), seed+1), c.db),
	}
	if c.beta != 0 {
		in.c = mmRoundAll(ref.Rand(nb*c.m*c.n, seed+2), c.dc)
	}
	if c.bias {
		in.bias = mmRoundAll(ref.Rand(c.n, seed+3), c.dbias)
	}
	return in
}

func mmNumB(c mmCase) int {
	if c.sharedB {
		return 1
	}
	return mmNum(c.batch)
}

// mmStart records c on d and returns the check to run once the device has
// done it: the result against the float64 reference, within the tolerance
// of an fp32 accumulation of length K rounded to the output dtype.
func mmStart(t *testing.T, d *vk.Device, c mmCase, in mmInputs) func() {
	t.Helper()
	return mmStartWith(t, d, c, in, tensor.MatMul)
}

// mmRun is a way to run a matmul: tensor.MatMul, or a forced kernel.
type mmRun func(a, b *tensor.Tensor, o tensor.MatMulOpts) *tensor.Tensor

// mmKind is MatMul asked for kernel kind v (MatMulOpts.Kind).
func mmKind(v string) mmRun {
	return func(a, b *tensor.Tensor, o tensor.MatMulOpts) *tensor.Tensor {
		o.Kind = v
		return tensor.MatMul(a, b, o)
	}
}

// mmStartWith is mmStart with the matmul given by run.
func mmStartWith(t *testing.T, d *vk.Device, c mmCase, in mmInputs, run mmRun) func() {
	t.Helper()
	out := run(mmOperands(t, d, c, in))
	t.Cleanup(out.Release)
	return func() {
		t.Helper()
		got, err := mmRead(out)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		alpha := float64(c.alpha)
		if alpha == 0 {
			alpha = 1
		}
		g := ref.Gemm{Batch: mmNum(c.batch), M: c.m, N: c.n, K: c.k, TransA: c.transA, TransB: c.transB,
			SharedB: c.sharedB, Alpha: alpha, Beta: float64(c.beta), A: in.a, B: in.b, C: in.c, Bias: in.bias}
		want, scale := g.Run()
		for i, w := range want { // a result past fp16's range must come out inf
			if c.out == mmF16 && math.Abs(w) > 65520 {
				want[i] = ref.Round(w, mmF16)
			}
		}
		ref.Check(t, c.String(), got, want, scale, ref.Tol(c.out, c.k))
	}
}

// mmOperands uploads c's operands and options.
func mmOperands(t *testing.T, d *vk.Device, c mmCase, in mmInputs) (a, b *tensor.Tensor, o tensor.MatMulOpts) {
	t.Helper()
	sa := append(append([]int{}, c.batch...), c.m, c.k)
	if c.transA {
		sa = append(append([]int{}, c.batch...), c.k, c.m)
	}
	sb := []int{c.k, c.n}
	if c.transB {
		sb = []int{c.n, c.k}
	}
	if !c.sharedB {
		sb = append(append([]int{}, c.batch...), sb...)
	}
	o = tensor.MatMulOpts{TransA: c.transA, TransB: c.transB, Alpha: c.alpha, Beta: c.beta, Out: c.out}
	if c.beta != 0 {
		o.C = mmUpload(t, d, in.c, c.dc, append(append([]int{}, c.batch...), c.m, c.n)...)
	}
	if c.bias {
		o.Bias = mmUpload(t, d, in.bias, c.dbias, c.n)
	}
	return mmUpload(t, d, in.a, c.da, sa...), mmUpload(t, d, in.b, c.db, sb...), o
}

// mmRunAll records every case, then checks them all: one wait for the
// device instead of one per case.
func mmRunAll(t *testing.T, d *vk.Device, cases []mmCase) {
	t.Helper()
	var checks []func()
	for i, c := range cases {
		checks = append(checks, mmStart(t, d, c, mmRandom(c, uint64(100+i))))
	}
	for _, check := range checks {
		check()
	}
}

// mmVariants are the VKAMP_MATMUL values to test: the device's default and
// every kernel the device can run.
func mmVariants(d *vk.Device) []string {
	v := []string{"", "shared", "register"}
	info := d.Info()
	// SwiftShader's compiler does not finish matmul_tex, which stores 64-bit
	// words (shaderInt64).
	if !strings.Contains(info.DriverName, "SwiftShader") && info.ShaderInt64 {
		v = append(v, "texel")
	}
	if info.CooperativeMatrixUsable {
		v = append(v, "coop")
	}
	for _, op := range info.SubgroupOperations {
		if op == "shuffle" && info.SubgroupInCompute {
			v = append(v, "subgroup")
		}
		if op == "quad" && info.SubgroupInCompute && info.SubgroupSize >= 4 {
			v = append(v, "quad")
		}
	}
	return v
}

func mmName(variant string) string {
	if variant == "" {
		return "default"
	}
	return variant
}

// mmShapeCases covers single elements, thin and tall matrices, sizes that
// are not multiples of any tile (1, 7, 33, 257, 1000), long K, batches and
// shared weights, spreading the transposes and dtypes over them. All but the
// last are small problems, which run the generic pipeline of each kernel.
func mmShapeCases() []mmCase {
	shapes := []struct {
		batch   []int
		m, n, k int
	}{
		{nil, 1, 1, 1}, {nil, 1, 1, 7}, {nil, 7, 1, 33}, {nil, 1, 1000, 7}, {nil, 1000, 1, 7},
		{nil, 33, 7, 1}, {nil, 7, 33, 257}, {nil, 3, 5, 4096}, {nil, 100, 40, 64}, {nil, 257, 33, 65},
		{nil, 40, 257, 30}, {[]int{2}, 33, 7, 9}, {[]int{2, 3}, 7, 33, 10}, {[]int{3}, 40, 70, 6},
	}
	dts := [][3]tensor.DType{{mmF16, mmF16, mmF16}, {mmF32, mmF32, mmF32}, {mmF16, mmF32, mmF16}, {mmF32, mmF16, mmF32}, {mmF16, mmF16, mmF32}}
	var cs []mmCase
	for i, s := range shapes {
		dt := dts[i%len(dts)]
		c := mmCase{batch: s.batch, m: s.m, n: s.n, k: s.k, transA: i%2 == 1, transB: i%4 >= 2,
			da: dt[0], db: dt[1], out: dt[2]}
		switch i % 3 {
		case 1:
			c.bias, c.dbias = true, dt[1]
		case 2:
			c.alpha, c.beta, c.dc = 0.5, -1.5, dt[2]
		}
		c.sharedB = len(s.batch) > 0 && i%2 == 0
		cs = append(cs, c)
	}
	// A large problem, for the specialised pipeline with large tiles: edges
	// in M, N and K that are not multiples of the tiles, every epilogue term.
	return append(cs, mmCase{m: 66, n: 130, k: 42, da: mmF16, db: mmF16, out: mmF16,
		alpha: 2, beta: 0.5, dc: mmF32, bias: true, dbias: mmF16})
}

// mmComboCases are all transposes with all input dtypes, on an odd shape
// (fp16 read one element per load) and an even one (two per load).
func mmComboCases() []mmCase {
	var cs []mmCase
	for _, s := range [][3]int{{7, 9, 5}, {10, 6, 8}} {
		for tr := 0; tr < 4; tr++ {
			for _, dt := range [][2]tensor.DType{{mmF32, mmF32}, {mmF16, mmF16}, {mmF16, mmF32}, {mmF32, mmF16}} {
				cs = append(cs, mmCase{m: s[0], n: s[1], k: s[2], transA: tr&1 != 0, transB: tr&2 != 0,
					da: dt[0], db: dt[1], out: []tensor.DType{mmF32, mmF16}[tr&1]})
			}
		}
	}
	return cs
}

// mmOddCases write fp16 results whose rows start mid-word (odd N, odd batch
// sizes), where in the packed tier two invocations share words.
func mmOddCases() []mmCase {
	var cs []mmCase
	for _, s := range [][4]int{{1, 3, 1, 5}, {1, 33, 7, 4}, {3, 5, 9, 8}, {2, 9, 1, 6}, {1, 1, 257, 3}, {5, 1, 1, 2}} {
		cs = append(cs, mmCase{batch: []int{s[0]}, m: s[1], n: s[2], k: s[3], da: mmF16, db: mmF16, out: mmF16},
			mmCase{batch: []int{s[0]}, m: s[1], n: s[2], k: s[3], da: mmF32, db: mmF16, out: mmF16,
				transB: true, bias: true, dbias: mmF16, beta: 2, dc: mmF16})
	}
	return cs
}

// mmTexelCases fit matmul_tex's layout (K and the contiguous dimensions
// multiples of 8): every transpose with every pair of input dtypes, rows
// that are not a multiple of its 8- or 16-row tiles, column groups past N,
// thin and single rows, batches with shared and batched B, every epilogue
// term.
func mmTexelCases() []mmCase {
	var cs []mmCase
	dts := [][2]tensor.DType{{mmF16, mmF16}, {mmF32, mmF32}, {mmF16, mmF32}, {mmF32, mmF16}}
	shapes := [][3]int{{8, 8, 8}, {24, 72, 40}, {40, 136, 16}, {16, 8, 64}}
	for tr := 0; tr < 4; tr++ {
		for i, dt := range dts {
			s := shapes[(tr+i)%len(shapes)]
			c := mmCase{m: s[0], n: s[1], k: s[2], transA: tr&1 != 0, transB: tr&2 != 0, da: dt[0], db: dt[1],
				out: []tensor.DType{mmF32, mmF16}[i%2]}
			switch (tr + i) % 3 {
			case 1:
				c.bias, c.dbias = true, dt[1]
			case 2:
				c.alpha, c.beta, c.dc = 0.5, -1.5, dt[0]
			}
			cs = append(cs, c)
		}
	}
	cs = append(cs,
		mmCase{m: 1, n: 64, k: 16, da: mmF16, db: mmF16, out: mmF16},
		mmCase{m: 17, n: 72, k: 24, da: mmF16, db: mmF16, out: mmF16, bias: true, dbias: mmF32},
		mmCase{m: 33, n: 201, k: 48, da: mmF16, db: mmF16, out: mmF32, transB: true},
		mmCase{m: 8, n: 13, k: 16, da: mmF32, db: mmF32, out: mmF16, transA: true, transB: true},
		mmCase{batch: []int{2}, m: 24, n: 16, k: 32, da: mmF16, db: mmF16, out: mmF16, transA: true},
		mmCase{batch: []int{3}, m: 9, n: 64, k: 8, da: mmF16, db: mmF32, out: mmF32, sharedB: true},
		mmCase{batch: []int{2, 2}, m: 5, n: 24, k: 16, da: mmF32, db: mmF16, out: mmF16, transB: true, beta: 1, dc: mmF16})
	// One geometry and layout under each epilogue in turn: each compiles
	// its own (EPI), and none may run another's.
	for _, e := range []mmCase{{out: mmF32}, {out: mmF32, beta: 1, dc: mmF32}, {out: mmF16, beta: -0.5, dc: mmBF16, bias: true, dbias: mmF16},
		{out: mmBF16, bias: true, dbias: mmBF16}, {out: mmF16, alpha: 3}, {out: mmF32, bias: true, dbias: mmF32}} {
		e.m, e.n, e.k, e.da, e.db = 24, 72, 40, mmF16, mmF16
		cs = append(cs, e)
	}
	return cs
}

// TestMatMul checks every kernel the device can run against the float64
// reference. One device serves all subtests, so each pipeline is built once.
func TestMatMul(t *testing.T) {
	d := devtest.Open(t)
	for _, v := range mmVariants(d) {
		t.Run(mmName(v), func(t *testing.T) {
			d := devtest.Open(t, vk.Options{Matmul: v})
			t.Run("shapes", func(t *testing.T) { mmRunAll(t, d, append(mmShapeCases(), mmComboCases()...)) })
			t.Run("oddfp16", func(t *testing.T) { mmRunAll(t, d, mmOddCases()) })
			t.Run("specials", func(t *testing.T) { mmSpecials(t, d) })
			if v == "texel" || v == "" {
				t.Run("texel", func(t *testing.T) { mmRunAll(t, d, mmTexelCases()) })
			}
		})
	}
	t.Run("property", func(t *testing.T) { mmProperty(t, d) })
}

// TestMatMulKernelChoice checks that VKAMP_MATMUL selects the kernel and
// that an unknown value is an error carried by the result.
func TestMatMulKernelChoice(t *testing.T) {
	d := devtest.Open(t)
	a := mmUpload(t, d, make([]float32, 64*64), mmF16, 64, 64)
	want := map[string]string{"shared": "matmul_shared", "register": "matmul_reg", "subgroup": "matmul_sg", "texel": "matmul_tex", "coop": "matmul_coop", "quad": "matmul_quad"}
	for _, v := range mmVariants(d)[1:] {
		k, err := tensor.MatMulKernel(d, a, a, tensor.MatMulOpts{Kind: v})
		if err != nil || k != want[v] {
			t.Errorf("VKAMP_MATMUL=%s: kernel %q, %v; want %s", v, k, err, want[v])
		}
	}
	k, _ := tensor.MatMulKernel(d, a, a, tensor.MatMulOpts{})
	t.Logf("%s (%s) runs %s", d.Info().Name, d.Info().Type, k)
	if err := tensor.MatMul(a, a, tensor.MatMulOpts{Kind: "bogus"}).Err(); err == nil || !strings.Contains(err.Error(), `"bogus"`) {
		t.Errorf("Kind bogus: error %v, want one naming it", err)
	}
	// A device opened with a kind runs it where the call names none.
	for _, v := range mmVariants(d)[1:] {
		dv := devtest.Open(t, vk.Options{Matmul: v})
		av := mmUpload(t, dv, make([]float32, 64*64), mmF16, 64, 64)
		if k, err := tensor.MatMulKernel(dv, av, av, tensor.MatMulOpts{}); err != nil || k != want[v] {
			t.Errorf("Options.Matmul %s: kernel %q, %v; want %s", v, k, err, want[v])
		}
	}
}

// TestMatMulWideStores checks which of matmul_tex's epilogues a product
// takes: 64-bit stores where N is a multiple of its 8-column tiles,
// per-element stores elsewhere, for fp32, fp16 and bf16 results. The choice
// depends on N and the tile alone, so the texel cases of TestMatMul and
// TestMatMulBF16 (N of 8, 16, 24, 64, 72, 128, 136; and 13, 201) run both.
func TestMatMulWideStores(t *testing.T) {
	d := devtest.Open(t)
	if !slices.Contains(mmVariants(d), "texel") {
		t.Skipf("%s runs no matmul_tex", d.Info().Name)
	}
	d = devtest.Open(t, vk.Options{Matmul: "texel"})
	for _, c := range []struct {
		n    int
		out  tensor.DType
		wide bool
	}{{72, mmF32, true}, {64, mmF16, true}, {24, tensor.BFloat16, true}, {201, mmF32, false}, {13, mmF16, false}} {
		a := mmUpload(t, d, make([]float32, 16*8), mmF16, 16, 8)
		b := mmUpload(t, d, make([]float32, 8*c.n), mmF16, c.n, 8)
		wide, err := tensor.MatMulWideStores(d, a, b, tensor.MatMulOpts{TransB: true, Out: c.out})
		if err != nil || wide != c.wide {
			t.Errorf("N = %d, %v out: wide stores %v, %v; want %v", c.n, c.out, wide, err, c.wide)
		}
	}
}

// mmSpecials checks that inf and NaN propagate as in IEEE arithmetic: a NaN
// in A poisons its row, an inf in B its column (NaN where it meets a zero or
// the opposite inf), a NaN bias its column, and beta = 0 ignores a NaN C.
// It also checks that fp16 subnormal inputs count.
func mmSpecials(t *testing.T, d *vk.Device) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	var checks []func()
	for i, c := range []mmCase{
		{m: 9, n: 11, k: 13, da: mmF16, db: mmF16, out: mmF16},
		{m: 40, n: 66, k: 20, da: mmF32, db: mmF32, out: mmF32, transA: true},
		{m: 33, n: 40, k: 8, da: mmF16, db: mmF32, out: mmF16, transB: true, bias: true, dbias: mmF32},
	} {
		in := mmRandom(c, uint64(7+i))
		in.a[3*c.k+c.k/2] = nan // row 3 (column 3 when transposed)
		in.a[5] = 0
		in.b[2*c.n+c.n-1] = inf
		in.b[c.k*c.n-1] = -inf
		if c.bias {
			in.bias[1] = nan
		}
		checks = append(checks, mmStart(t, d, c, in))
	}
	// fp16 subnormal inputs must not be flushed: with an fp32 result of
	// about 1e-5 the tolerance is far below the values.
	sub := mmCase{m: 6, n: 5, k: 9, da: mmF16, db: mmF16, out: mmF32, transB: true}
	in := mmRandom(sub, 3)
	for i := range in.a {
		in.a[i] = float32(ref.Round(float64(in.a[i])*0x1p-15, mmF16))
	}
	checks = append(checks, mmStart(t, d, sub, in))
	// beta = 0: C is not read even when it is NaN.
	in = mmRandom(mmCase{m: 5, n: 6, k: 7, da: mmF32, db: mmF32}, 1)
	cnan := make([]float32, 5*6)
	for i := range cnan {
		cnan[i] = nan
	}
	o := tensor.MatMulOpts{C: mmUpload(t, d, cnan, mmF32, 5, 6)}
	out := tensor.MatMul(mmUpload(t, d, in.a, mmF32, 5, 7), mmUpload(t, d, in.b, mmF32, 7, 6), o)
	t.Cleanup(out.Release)
	for _, check := range checks {
		check()
	}
	got, err := out.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	want, scale := ref.Gemm{Batch: 1, M: 5, N: 6, K: 7, Alpha: 1, A: in.a, B: in.b}.Run()
	ref.Check(t, "beta=0 with NaN C", got, want, scale, ref.Tol(mmF32, 7))
}

// mmProperty compares random small problems with the reference.
func mmProperty(t *testing.T, d *vk.Device) {
	dts := []tensor.DType{mmF32, mmF16}
	f := func(seed uint64) bool {
		r := rand.New(rand.NewPCG(seed, 1))
		c := mmCase{m: 1 + r.IntN(40), n: 1 + r.IntN(40), k: 1 + r.IntN(40),
			transA: r.IntN(2) == 0, transB: r.IntN(2) == 0,
			da: dts[r.IntN(2)], db: dts[r.IntN(2)], out: dts[r.IntN(2)]}
		if r.IntN(3) == 0 {
			c.batch = []int{1 + r.IntN(3)}
			c.sharedB = r.IntN(2) == 0
		}
		if r.IntN(3) == 0 {
			c.bias, c.dbias = true, dts[r.IntN(2)]
		}
		if r.IntN(3) == 0 {
			c.alpha, c.beta, c.dc = float32(r.IntN(5))-2, float32(r.IntN(5))-2, dts[r.IntN(2)]
		}
		mmStart(t, d, c, mmRandom(c, seed))()
		return !t.Failed()
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 20}); err != nil {
		t.Error(err)
	}
}

// TestMatMulPanics checks that misuse panics with typed values naming the
// op and both shapes.
func TestMatMulPanics(t *testing.T) {
	d := devtest.Open(t)
	a := mmUpload(t, d, make([]float32, 6), mmF32, 2, 3)
	b := mmUpload(t, d, make([]float32, 12), mmF32, 4, 3)
	v := mmUpload(t, d, make([]float32, 3), mmF32, 3)
	b3 := mmUpload(t, d, make([]float32, 24), mmF32, 2, 3, 4)
	a3 := mmUpload(t, d, make([]float32, 18), mmF32, 3, 2, 3) // batch 3 against B's 2: no broadcast
	for _, tc := range []struct {
		name string
		f    func()
		want any
	}{
		{"inner", func() { tensor.MatMul(a, b, tensor.MatMulOpts{}) }, &tensor.ShapeError{}},
		{"rank1", func() { tensor.MatMul(a, v, tensor.MatMulOpts{}) }, &tensor.ShapeError{}},
		{"batchB", func() { tensor.MatMul(a3, b3, tensor.MatMulOpts{}) }, &tensor.ShapeError{}},
		{"bias", func() { tensor.MatMul(a, b, tensor.MatMulOpts{TransB: true, Bias: v}) }, &tensor.ShapeError{}},
		{"C", func() { tensor.MatMul(a, b, tensor.MatMulOpts{TransB: true, Beta: 1, C: v}) }, &tensor.ShapeError{}},
		{"nilC", func() { tensor.MatMul(a, b, tensor.MatMulOpts{TransB: true, Beta: 1}) }, &tensor.UsageError{}},
		{"out", func() { tensor.MatMul(a, b, tensor.MatMulOpts{TransB: true, Out: tensor.DType(200)}) }, &tensor.DTypeError{}},
		{"nil", func() { tensor.MatMul(a, nil, tensor.MatMulOpts{}) }, &tensor.UsageError{}},
	} {
		func() {
			defer func() {
				r := recover()
				if r == nil {
					t.Errorf("%s: no panic", tc.name)
					return
				}
				if fmt.Sprintf("%T", r) != fmt.Sprintf("%T", tc.want) {
					t.Errorf("%s: panic %T (%v), want %T", tc.name, r, r, tc.want)
				}
				if se, ok := r.(*tensor.ShapeError); ok && (se.Op != "MatMul" || se.A == nil || se.B == nil) {
					t.Errorf("%s: %v does not name the op and both shapes", tc.name, se)
				}
			}()
			tc.f()
		}()
	}
}

// TestMatMulErrorPropagation checks that an input carrying an error gives a
// result carrying the same error, without running anything.
func TestMatMulErrorPropagation(t *testing.T) {
	d := devtest.Open(t)
	a := mmUpload(t, d, make([]float32, 6), mmF32, 2, 3)
	huge := tensor.New(d, mmF32, 1<<29, 2) // 4 GiB: the allocation fails
	t.Cleanup(huge.Release)
	if huge.Err() == nil {
		t.Skip("the device allocated 8 GiB")
	}
	out := tensor.MatMul(huge, a, tensor.MatMulOpts{})
	if !errors.Is(out.Err(), huge.Err()) {
		t.Errorf("error %v, want %v", out.Err(), huge.Err())
	}
}
