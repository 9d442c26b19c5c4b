package tensor_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/x448/float16"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Tests of matmul_coop, the matmul on cooperative matrices. On a device
// without them (CPU drivers, older GPUs) TestMatMulCoop skips as a missing
// feature; TestMatMulCoopEmu runs the same kernel with the matrix operations
// emulated, which checks its tiling, staging, edges and epilogue anywhere.

// mmCoopCases are fp16 x fp16 problems for matmul_coop: one tile and many,
// edges in M, N and K that are not multiples of 16, 8 or the tiles (so both
// the 8-at-a-time and the element-wise loads), every transpose, batches with
// shared and batched B, a long K, a single element, every epilogue term with
// fp16 and fp32 C and bias, fp16 and fp32 results, and NaN and inf inputs.
func mmCoopCases(short bool) []mmCase {
	f16, f32 := mmF16, mmF32
	cs := []mmCase{
		{m: 128, n: 128, k: 32, da: f16, db: f16, out: f16},
		{m: 256, n: 192, k: 96, da: f16, db: f16, out: f32},
		{m: 100, n: 130, k: 70, da: f16, db: f16, out: f16, bias: true, dbias: f16},
		{m: 1, n: 1, k: 1, da: f16, db: f16, out: f32},
		{m: 7, n: 9, k: 5, da: f16, db: f16, out: f16, alpha: 0.5, beta: -1.5, dc: f32},
		{m: 33, n: 17, k: 257, da: f16, db: f16, out: f32, bias: true, dbias: f32},
		{m: 64, n: 64, k: 1000, da: f16, db: f16, out: f32},
		{m: 300, n: 260, k: 96, da: f16, db: f16, out: f16, alpha: 2, beta: 0.5, dc: f16, bias: true, dbias: f16},
		{batch: []int{2}, m: 72, n: 40, k: 48, da: f16, db: f16, out: f16, sharedB: true},
		{batch: []int{3}, m: 50, n: 24, k: 24, da: f16, db: f16, out: f32, beta: 1, dc: f16},
		{batch: []int{2, 3}, m: 17, n: 33, k: 40, da: f16, db: f16, out: f16, transA: true, transB: true, bias: true, dbias: f32},
	}
	// Every transpose on an aligned shape (8 at a time) and a ragged one.
	for tr := 0; tr < 4; tr++ {
		for i, s := range [][3]int{{72, 136, 48}, {70, 130, 50}, {136, 24, 40}} {
			c := mmCase{m: s[0], n: s[1], k: s[2], transA: tr&1 != 0, transB: tr&2 != 0, da: f16, db: f16,
				out: []tensor.DType{f16, f32}[(tr+i)%2]}
			if (tr+i)%3 == 1 {
				c.alpha, c.beta, c.dc = -1, 2, []tensor.DType{f32, f16}[tr%2]
			}
			cs = append(cs, c)
		}
	}
	if short {
		cs = append(cs[:3:3], cs[len(cs)-12:]...)
	}
	return cs
}

// mmCoopRunAll records every case, then checks them all.
func mmCoopRunAll(t *testing.T, d *vk.Device, cases []mmCase, run mmRun) {
	t.Helper()
	var checks []func()
	for i, c := range cases {
		in := mmRandom(c, uint64(300+i))
		if i == 2 && len(in.a) > 3*c.k+c.k/2 { // IEEE specials: a NaN poisons a row of A, an inf a column of B
			in.a[3*c.k+c.k/2] = float32(math.NaN())
			in.b[c.k*c.n-1] = float32(math.Inf(1))
		}
		checks = append(checks, mmStartWith(t, d, c, in, run))
	}
	for _, check := range checks {
		check()
	}
}

func mmCoopVariant(v string) mmRun {
	return func(a, b *tensor.Tensor, o tensor.MatMulOpts) *tensor.Tensor { return tensor.MatMulCoop(a, b, o, v) }
}

// mmCoopWhy says why a device does not run matmul_coop.
func mmCoopWhy(d *vk.Device) string {
	info := d.Info()
	return fmt.Sprintf("%s (%s, tier %s): VK_KHR_cooperative_matrix %v, fp16 x fp16 -> fp32 shape %v, usable %v",
		info.Name, info.DriverName, d.Tier(), info.CooperativeMatrix, info.CooperativeMatrixShape, info.CooperativeMatrixUsable)
}

// TestMatMulCoop checks matmul_coop against the float64 reference with the
// rule's plans and each tile forced, then through MatMul itself
// (VKAMP_MATMUL=coop, and the default rule).
func TestMatMulCoop(t *testing.T) {
	d := devtest.Open(t)
	info := d.Info()
	if !info.CooperativeMatrixUsable {
		t.Skipf("feature not available, matmul_coop not tested: %s", mmCoopWhy(d))
	}
	kernel, spec, rows, cols, ok := tensor.CoopPlan(info, 1, 4096, 4096, 4096, false, false, true, true)
	t.Logf("%s: fp16 4096^3 plan: %s %dx%d tiles, ok %v, spec %+v", mmCoopWhy(d), kernel, rows, cols, ok, spec)
	if info.CooperativeMatrixShape != [3]uint32{16, 16, 16} {
		t.Skipf("feature not available: matmul_coop needs a 16x16x16 shape: %s", mmCoopWhy(d))
	}
	for _, v := range tensor.CoopVariants[:3] {
		t.Run(v, func(t *testing.T) { mmCoopRunAll(t, d, mmCoopCases(testing.Short()), mmCoopVariant(v)) })
	}
	t.Run("MatMul", func(t *testing.T) {
		a := mmUpload(t, d, make([]float32, 64*64), mmF16, 64, 64)
		t.Setenv("VKAMP_MATMUL", "coop")
		if k, err := tensor.MatMulKernel(d, a, a, tensor.MatMulOpts{}); err != nil || k != "matmul_coop" {
			t.Skipf("VKAMP_MATMUL=coop is not wired into MatMul: kernel %q, %v", k, err)
		}
		mmCoopRunAll(t, d, mmCoopCases(true), tensor.MatMul)
		t.Setenv("VKAMP_MATMUL", "")
		k, err := tensor.MatMulKernel(d, a, a, tensor.MatMulOpts{})
		if err != nil || k != "matmul_coop" {
			t.Errorf("default rule: fp16 runs %q (%v), want matmul_coop", k, err)
		}
		f := mmUpload(t, d, make([]float32, 64*64), mmF32, 64, 64)
		if k, err := tensor.MatMulKernel(d, f, f, tensor.MatMulOpts{}); err != nil || k == "matmul_coop" {
			t.Errorf("default rule: fp32 runs %q (%v), want another kernel", k, err)
		}
	})
}

// TestMatMulCoopEmu runs matmul_coop's emulation (matmul_coop_emu, with
// 32-wide emulated subgroups) on any device with 16-bit storage: the
// indexing of the real kernel, minus the cooperative-matrix operations.
func TestMatMulCoopEmu(t *testing.T) {
	d := devtest.Open(t)
	if d.Tier() < vk.TierStorage16 {
		t.Skipf("feature not available: matmul_coop_emu needs 16-bit storage, %s runs tier %s", d.Info().Name, d.Tier())
	}
	// Both tiles, and tiles of other shapes: taller than wide and wider than
	// tall, one subgroup row, a k step of 16.
	for _, v := range append(tensor.CoopVariants[3:], "emu-tile=128x64x32/2x2", "emu-tile=64x128x16/1x4") {
		cases := mmCoopCases(testing.Short())
		if v != "emu-small" && testing.Short() { // the same code; CPU drivers take long to compile
			cases = cases[:3]
		}
		t.Run(v, func(t *testing.T) { mmCoopRunAll(t, d, cases, mmCoopVariant(v)) })
	}
}

// TestMatMulCoopPlan checks the plan rule on devices described by hand: an
// H200 (vkinfo's report) and variations of it.
func TestMatMulCoopPlan(t *testing.T) {
	h200 := vk.Info{Name: "NVIDIA H200", Type: vk.TypeDiscrete, SubgroupSize: 32, MaxSharedMemory: 49152,
		MaxWorkgroupSize: [3]uint32{1024, 1024, 64}, MaxWorkgroupInvocations: 1024, Tier: vk.TierFP16,
		CooperativeMatrix: true, CooperativeMatrixShape: [3]uint32{16, 16, 16}, CooperativeMatrixUsable: true}
	type want struct {
		ok           bool
		rows, wg     int
		modeA, modeB uint32 // 1 one fp16 at a time, 3 eight
	}
	for _, c := range []struct {
		name       string
		info       func(vk.Info) vk.Info
		b, m, n, k int
		ta, tb     bool
		fa, fb     bool
		want       want
	}{
		{"4096", nil, 1, 4096, 4096, 4096, false, false, true, true, want{true, 128, 256, 3, 3}},
		{"1024 small tiles", nil, 1, 1024, 1024, 1024, false, false, true, true, want{true, 64, 128, 3, 3}},
		{"batched 1024", nil, 2, 1024, 1024, 1024, false, false, true, true, want{true, 128, 256, 3, 3}},
		{"ragged", nil, 1, 4095, 4097, 4093, false, false, true, true, want{true, 128, 256, 1, 1}},
		{"transposed", nil, 1, 4096, 4100, 4095, true, true, true, true, want{true, 128, 256, 3, 1}},
		{"fp32 A", nil, 1, 4096, 4096, 4096, false, false, false, true, want{}},
		{"fp32 B", nil, 1, 4096, 4096, 4096, false, false, true, false, want{}},
		{"not usable", func(i vk.Info) vk.Info { i.CooperativeMatrixUsable = false; return i }, 1, 64, 64, 64, false, false, true, true, want{}},
		{"8x16x16", func(i vk.Info) vk.Info { i.CooperativeMatrixShape = [3]uint32{8, 16, 16}; return i }, 1, 64, 64, 64, false, false, true, true, want{}},
		{"subgroup 64", func(i vk.Info) vk.Info { i.SubgroupSize = 64; return i }, 1, 4096, 4096, 4096, false, false, true, true, want{true, 128, 512, 3, 3}},
		{"subgroup 8", func(i vk.Info) vk.Info { i.SubgroupSize = 8; return i }, 1, 4096, 4096, 4096, false, false, true, true, want{}},
		{"32 KiB shared", func(i vk.Info) vk.Info { i.MaxSharedMemory = 32768; return i }, 1, 4096, 4096, 4096, false, false, true, true, want{true, 64, 128, 3, 3}},
		{"128 invocations", func(i vk.Info) vk.Info { i.MaxWorkgroupInvocations = 128; return i }, 1, 4096, 4096, 4096, false, false, true, true, want{true, 64, 128, 3, 3}},
	} {
		info := h200
		if c.info != nil {
			info = c.info(info)
		}
		kernel, spec, rows, cols, ok := tensor.CoopPlan(info, c.b, c.m, c.n, c.k, c.ta, c.tb, c.fa, c.fb)
		got := want{ok: ok}
		if ok {
			got = want{true, rows, int(spec.LocalSizeX), spec.AMode, spec.BMode}
			if kernel != "matmul_coop" || cols != rows || spec.BM != uint32(rows) || spec.BN != uint32(cols) || spec.BK != 32 ||
				spec.SG != info.SubgroupSize || spec.TN != 256/info.SubgroupSize || spec.TM != 1 ||
				spec.WarpsM*spec.WarpsN*spec.SG != spec.LocalSizeX || spec.TransA != c.ta || spec.TransB != c.tb || spec.Dyn {
				t.Errorf("%s: inconsistent plan %s %dx%d %+v", c.name, kernel, rows, cols, spec)
			}
		}
		if got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

// mmCoopTiles are the tiles TestMatMulCoopSpeed times beside the rule's:
// for choosing the rule's tiles on a new device.
var mmCoopTiles = []string{"tile=128x128x32/4x2", "tile=128x64x32/2x2", "tile=64x128x32/2x2",
	"tile=128x256x16/2x4", "tile=256x128x16/4x2", "tile=128x128x16/2x4", "tile=64x64x32/1x2"}

// TestMatMulCoopSpeed times fp16 4096^3 (fp16 result) on matmul_coop's
// plans, on other tiles and on the shared-memory kernel, and spot-checks
// the results. It logs TFLOP/s (run with -test.v to see them): by the
// device's timestamps, kernels alone, and by the wall clock over a batch of
// 20, output allocations included.
func TestMatMulCoopSpeed(t *testing.T) {
	if testing.Short() {
		t.Skip("timing: not in -short")
	}
	d := devtest.Open(t)
	if !d.Info().CooperativeMatrixUsable {
		t.Skipf("feature not available, matmul_coop not timed: %s", mmCoopWhy(d))
	}
	if d.Info().Timestamps {
		d = devtest.Open(t, vk.Options{Timestamps: true})
	}
	mmCoopSpeed(t, d, 4096, append(append(tensor.CoopVariants[:3:3], mmCoopTiles...), "shared"))
}

// mmCoopSpeed times n^3 fp16 matmuls of each variant: "shared" for the
// shared-memory kernel, else a MatMulCoop variant.
func mmCoopSpeed(t *testing.T, d *vk.Device, n int, variants []string) {
	// kernelTime is the device time and count of the kernels named kernel*.
	kernelTime := func(kernel string) (ns float64, count int) {
		for _, k := range d.KernelTimes() {
			if strings.HasPrefix(k.Name, kernel) {
				ns, count = ns+k.Nanoseconds, count+k.Count
			}
		}
		return ns, count
	}
	r := rand.New(rand.NewPCG(7, 8))
	av, bv := make([]float32, n*n), make([]float32, n*n)
	for i := range av {
		av[i] = float16.Fromfloat32(r.Float32()*2 - 1).Float32()
		bv[i] = float16.Fromfloat32(r.Float32()*2 - 1).Float32()
	}
	a, b := mmUpload(t, d, av, mmF16, n, n), mmUpload(t, d, bv, mmF16, n, n)
	o := tensor.MatMulOpts{Out: mmF16}
	shared := func(a, b *tensor.Tensor, o tensor.MatMulOpts) *tensor.Tensor {
		t.Setenv("VKAMP_MATMUL", "shared")
		defer t.Setenv("VKAMP_MATMUL", "")
		return tensor.MatMul(a, b, o)
	}
	for _, name := range variants {
		run := mmCoopVariant(name)
		if name == "shared" {
			run = shared
		}
		warm := run(a, b, o) // builds the pipeline
		got, err := warm.Float32s()
		warm.Release()
		if err != nil {
			if name == "auto" || name == "large" || name == "shared" {
				t.Fatalf("%s: %v", name, err)
			}
			t.Logf("%s: %v", name, err)
			continue
		}
		// Spot-check 64 elements against the float64 reference.
		for s := 0; s < 64; s++ {
			i, j := r.IntN(n), r.IntN(n)
			var want, scale float64
			for k := 0; k < n; k++ {
				p := float64(av[i*n+k]) * float64(bv[k*n+j])
				want += p
				scale += math.Abs(p)
			}
			if w := ref.Round(want, mmF16); math.Abs(float64(got[i*n+j])-w) > ref.Tol(mmF16, n)*scale+ref.Unit(mmF16)*math.Abs(w) {
				t.Errorf("%s: out[%d][%d] = %g, want %g", name, i, j, got[i*n+j], w)
			}
		}
		iters := 20
		if name == "shared" {
			iters = 3
		}
		kernel := "matmul_coop."
		if name == "shared" {
			kernel = "matmul_shared."
		} else if strings.HasPrefix(name, "emu-") {
			kernel = "matmul_coop_emu."
		}
		ns0, n0 := kernelTime(kernel)
		start := time.Now()
		outs := make([]*tensor.Tensor, iters)
		for i := range outs {
			outs[i] = run(a, b, o)
		}
		if err := d.Wait(); err != nil {
			t.Fatal(err)
		}
		el := time.Since(start)
		for _, x := range outs {
			if err := x.Err(); err != nil {
				t.Fatal(err)
			}
			x.Release()
		}
		flop := 2 * math.Pow(float64(n), 3)
		dev := "no timestamps"
		if ns1, n1 := kernelTime(kernel); n1 > n0 {
			per := (ns1 - ns0) / float64(n1-n0)
			dev = fmt.Sprintf("%7.2f TFLOP/s, %.3f ms", flop/per/1e3, per/1e6)
		}
		t.Logf("fp16 %d^3 %-20s device %s; wall %7.2f TFLOP/s over %d", n, name, dev,
			flop*float64(iters)/el.Seconds()/1e12, iters)
	}
}
