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
	return fmt.Sprintf("%s (%s, tier %s): VK_KHR_cooperative_matrix %v, fp16 x fp16 -> fp32 shapes %v (usable %v), bf16 shapes %v (usable %v)",
		info.Name, info.DriverName, d.Tier(), info.CooperativeMatrix, info.CooperativeMatrixShapes, info.CooperativeMatrixUsable,
		info.CooperativeMatrixBF16Shapes, info.CooperativeMatrixBF16Usable)
}

// mmCoopBF16Cases are mmCoopCases with bf16 operands.
func mmCoopBF16Cases(short bool) []mmCase {
	cs := mmCoopCases(short)
	for i := range cs {
		cs[i].da, cs[i].db = mmBF16, mmBF16
		if i%3 == 0 {
			cs[i].out = mmBF16
		}
	}
	return cs
}

// TestMatMulCoop checks matmul_coop against the float64 reference with the
// rule's plans, each tile and each subgroup shape the device lists forced,
// then through MatMul itself (VKAMP_MATMUL=coop, and the default rule), and
// matmul_coop_bf16 where the device's cooperative matrices take bf16.
func TestMatMulCoop(t *testing.T) {
	d := devtest.Open(t)
	info := d.Info()
	if !info.CooperativeMatrixUsable {
		t.Skipf("feature not available, matmul_coop not tested: %s", mmCoopWhy(d))
	}
	kernel, spec, rows, cols, ok := tensor.CoopPlan(info, 1, 4096, 4096, 4096, false, false, mmF16, mmF16)
	t.Logf("%s: fp16 4096^3 plan: %s %dx%d tiles, ok %v, spec %+v", mmCoopWhy(d), kernel, rows, cols, ok, spec)
	if !ok {
		t.Fatalf("no matmul_coop plan for fp16 4096^3 on %s", mmCoopWhy(d))
	}
	// CPU drivers compile each specialisation for a second or two: every
	// case on the rule's plan, the short list on the others.
	short := testing.Short() || info.Type == vk.TypeCPU
	variants := tensor.CoopVariants[:3:3]
	for _, s := range info.CooperativeMatrixShapes {
		variants = append(variants, fmt.Sprintf("shape=%dx%dx%d", s[0], s[1], s[2]))
	}
	for _, v := range variants {
		t.Run(v, func(t *testing.T) { mmCoopRunAll(t, d, mmCoopCases(short && v != "auto"), mmCoopVariant(v)) })
	}
	t.Run("bf16", func(t *testing.T) {
		if !info.CooperativeMatrixBF16Usable {
			t.Skipf("feature not available, matmul_coop_bf16 not run (TestMatMulCoopEmu checks its tiling): %s", mmCoopWhy(d))
		}
		for _, v := range variants[:2] {
			mmCoopRunAll(t, d, mmCoopBF16Cases(short && v != "auto"), mmCoopVariant(v))
		}
	})
	t.Run("MatMul", func(t *testing.T) {
		a := mmUpload(t, d, make([]float32, 64*64), mmF16, 64, 64)
		if k, err := tensor.MatMulKernel(d, a, a, tensor.MatMulOpts{Kind: "coop"}); err != nil || k != "matmul_coop" {
			t.Fatalf("Kind coop: fp16 runs %q (%v), want matmul_coop", k, err)
		}
		mmCoopRunAll(t, d, mmCoopCases(true), mmKind("coop"))
		bf := mmUpload(t, d, make([]float32, 64*64), mmBF16, 64, 64)
		want := "matmul_coop_bf16"
		if !info.CooperativeMatrixBF16Usable {
			want = "matmul_shared"
		}
		if k, err := tensor.MatMulKernel(d, bf, bf, tensor.MatMulOpts{Kind: "coop"}); err != nil || k != want {
			t.Errorf("Kind coop: bf16 runs %q (%v), want %s", k, err, want)
		}
		k, err := tensor.MatMulKernel(d, a, a, tensor.MatMulOpts{})
		if info.Type != vk.TypeCPU && (err != nil || k != "matmul_coop") {
			t.Errorf("default rule: fp16 runs %q (%v), want matmul_coop", k, err)
		}
		f := mmUpload(t, d, make([]float32, 64*64), mmF32, 64, 64)
		if k, err := tensor.MatMulKernel(d, f, f, tensor.MatMulOpts{}); err != nil || strings.HasPrefix(k, "matmul_coop") {
			t.Errorf("default rule: fp32 runs %q (%v), want another kernel", k, err)
		}
	})
}

// TestMatMulCoopEmu runs matmul_coop's emulation (matmul_coop_emu, with
// 32-wide emulated subgroups) on any device with 16-bit storage: the
// indexing of the real kernel, minus the cooperative-matrix operations, for
// the subgroup shapes of NVIDIA, AMD, Intel and lavapipe, and bf16 inputs.
func TestMatMulCoopEmu(t *testing.T) {
	d := devtest.Open(t)
	if d.Tier() < vk.TierStorage16 {
		t.Skipf("feature not available: matmul_coop_emu needs 16-bit storage, %s runs tier %s", d.Info().Name, d.Tier())
	}
	// Both tiles, and tiles of other shapes: taller than wide and wider than
	// tall, one subgroup row, a k step of 16; then other fragment shapes.
	variants := append(tensor.CoopVariants[3:], "emu-tile=128x64x32/2x2", "emu-tile=64x128x16/1x4",
		"emu-tile=64x64x32/2x2/shape=8x8x8", "emu-tile=64x64x32/2x2/shape=16x8x16", "emu-tile=64x64x32/2x2/shape=8x16x16",
		"emu-tile=64x128x16/2x2/shape=16x16x8")
	for _, v := range variants {
		cases := mmCoopCases(testing.Short())
		if v != "emu-small" && testing.Short() { // the same code; CPU drivers take long to compile
			cases = cases[:3]
		}
		t.Run(v, func(t *testing.T) { mmCoopRunAll(t, d, cases, mmCoopVariant(v)) })
	}
	t.Run("bf16", func(t *testing.T) {
		mmCoopRunAll(t, d, mmCoopBF16Cases(true), mmCoopVariant("emu-small"))
		mmCoopRunAll(t, d, mmCoopBF16Cases(true)[:3], mmCoopVariant("emu-tile=64x64x32/2x2/shape=8x8x8"))
	})
}

// TestMatMulCoopPlan checks the plan rule on devices described by hand: an
// H200 (vkinfo's report), a lavapipe (Mesa 26) and variations of them.
func TestMatMulCoopPlan(t *testing.T) {
	h200 := vk.Info{Name: "NVIDIA H200", Type: vk.TypeDiscrete, SubgroupSize: 32, MaxSharedMemory: 49152,
		MaxWorkgroupSize: [3]uint32{1024, 1024, 64}, MaxWorkgroupInvocations: 1024, Tier: vk.TierFP16,
		CooperativeMatrix: true, CooperativeMatrixUsable: true,
		CooperativeMatrixShapes: [][3]uint32{{16, 8, 16}, {16, 8, 8}, {16, 16, 16}}}
	lvp := vk.Info{Name: "llvmpipe", Type: vk.TypeCPU, SubgroupSize: 8, MaxSharedMemory: 32768,
		MaxWorkgroupSize: [3]uint32{1024, 1024, 1024}, MaxWorkgroupInvocations: 1024, Tier: vk.TierFP16,
		CooperativeMatrix: true, CooperativeMatrixUsable: true, CooperativeMatrixShapes: [][3]uint32{{8, 8, 8}}}
	withBF16 := func(i vk.Info) vk.Info {
		i.CooperativeMatrixBF16Usable, i.CooperativeMatrixBF16Shapes = true, [][3]uint32{{16, 16, 16}}
		return i
	}
	shapes := func(s ...[3]uint32) func(vk.Info) vk.Info {
		return func(i vk.Info) vk.Info { i.CooperativeMatrixShapes = s; return i }
	}
	type want struct {
		ok           bool
		kernel       string
		rows, wg     int
		modeA, modeB uint32 // 1 one element at a time, 3 eight
		shape        [3]uint32
	}
	coop, s16 := "matmul_coop", [3]uint32{16, 16, 16}
	f16, bf := mmF16, mmBF16
	for _, c := range []struct {
		name       string
		base       vk.Info
		info       func(vk.Info) vk.Info
		b, m, n, k int
		ta, tb     bool
		da, db     tensor.DType
		want       want
	}{
		{"4096", h200, nil, 1, 4096, 4096, 4096, false, false, f16, f16, want{true, coop, 128, 256, 3, 3, s16}},
		{"1024 small tiles", h200, nil, 1, 1024, 1024, 1024, false, false, f16, f16, want{true, coop, 64, 128, 3, 3, s16}},
		{"batched 1024", h200, nil, 2, 1024, 1024, 1024, false, false, f16, f16, want{true, coop, 128, 256, 3, 3, s16}},
		{"ragged", h200, nil, 1, 4095, 4097, 4093, false, false, f16, f16, want{true, coop, 128, 256, 1, 1, s16}},
		{"transposed", h200, nil, 1, 4096, 4100, 4095, true, true, f16, f16, want{true, coop, 128, 256, 3, 1, s16}},
		{"fp32 A", h200, nil, 1, 4096, 4096, 4096, false, false, mmF32, f16, want{}},
		{"fp32 B", h200, nil, 1, 4096, 4096, 4096, false, false, f16, mmF32, want{}},
		{"fp16 x bf16", withBF16(h200), nil, 1, 4096, 4096, 4096, false, false, f16, bf, want{}},
		{"bf16 without bf16 shapes", h200, nil, 1, 4096, 4096, 4096, false, false, bf, bf, want{}},
		{"bf16", withBF16(h200), nil, 1, 4096, 4096, 4096, false, false, bf, bf, want{true, "matmul_coop_bf16", 128, 256, 3, 3, s16}},
		{"not usable", h200, func(i vk.Info) vk.Info { i.CooperativeMatrixUsable = false; return i }, 1, 64, 64, 64, false, false, f16, f16, want{}},
		{"8x16x16", h200, shapes([3]uint32{8, 16, 16}), 1, 64, 64, 64, false, false, f16, f16, want{true, coop, 64, 128, 3, 3, [3]uint32{8, 16, 16}}},
		{"16x8x16 alone", h200, shapes([3]uint32{16, 8, 16}), 1, 4096, 4096, 4096, false, false, f16, f16, want{true, coop, 128, 256, 3, 3, [3]uint32{16, 8, 16}}},
		{"12x12x12 skipped", h200, shapes([3]uint32{12, 12, 12}, [3]uint32{8, 8, 8}), 1, 64, 64, 64, false, false, f16, f16, want{true, coop, 64, 128, 3, 3, [3]uint32{8, 8, 8}}},
		{"no shape fits", h200, shapes([3]uint32{12, 12, 12}), 1, 64, 64, 64, false, false, f16, f16, want{}},
		{"subgroup 64", h200, func(i vk.Info) vk.Info { i.SubgroupSize = 64; return i }, 1, 4096, 4096, 4096, false, false, f16, f16, want{true, coop, 128, 512, 3, 3, s16}},
		{"subgroup 8, 16x16", h200, func(i vk.Info) vk.Info { i.SubgroupSize = 8; return i }, 1, 4096, 4096, 4096, false, false, f16, f16, want{}},
		{"32 KiB shared", h200, func(i vk.Info) vk.Info { i.MaxSharedMemory = 32768; return i }, 1, 4096, 4096, 4096, false, false, f16, f16, want{true, coop, 64, 128, 3, 3, s16}},
		{"128 invocations", h200, func(i vk.Info) vk.Info { i.MaxWorkgroupInvocations = 128; return i }, 1, 4096, 4096, 4096, false, false, f16, f16, want{true, coop, 64, 128, 3, 3, s16}},
		{"lavapipe", lvp, nil, 1, 1024, 1024, 1024, false, false, f16, f16, want{true, coop, 64, 32, 3, 3, [3]uint32{8, 8, 8}}},
		{"lavapipe ragged transposed", lvp, nil, 2, 100, 130, 70, true, false, f16, f16, want{true, coop, 64, 32, 1, 1, [3]uint32{8, 8, 8}}},
	} {
		info := c.base
		if c.info != nil {
			info = c.info(info)
		}
		kernel, spec, rows, cols, ok := tensor.CoopPlan(info, c.b, c.m, c.n, c.k, c.ta, c.tb, c.da, c.db)
		got := want{ok: ok}
		if ok {
			got = want{true, kernel, rows, int(spec.LocalSizeX), spec.AMode, spec.BMode, [3]uint32{spec.Cm, spec.Cn, spec.Ck}}
			if cols != rows || spec.BM != uint32(rows) || spec.BN != uint32(cols) || spec.BK%spec.Ck != 0 ||
				spec.SG != info.SubgroupSize || spec.TN != spec.Cm*spec.Cn/info.SubgroupSize || spec.Cn%spec.TN != 0 || spec.TM != 1 ||
				spec.WarpsM*spec.WarpsN*spec.SG != spec.LocalSizeX || spec.TransA != c.ta || spec.TransB != c.tb || spec.Dyn {
				t.Errorf("%s: inconsistent plan %s %dx%d %+v", c.name, kernel, rows, cols, spec)
			}
		}
		if got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

// TestMatMulCoopmat2Plan checks VKAMP_MATMUL=coopmat2's plans on devices
// described by hand: Mesa 26's lavapipe (subgroup scope only, 8x8x8
// granules, flexible dimensions up to 1024), a GPU with every feature, and
// variations of them.
func TestMatMulCoopmat2Plan(t *testing.T) {
	lvp := vk.Info{Name: "llvmpipe", Type: vk.TypeCPU, SubgroupSize: 8, MaxSharedMemory: 32768,
		MaxWorkgroupSize: [3]uint32{1024, 1024, 1024}, MaxWorkgroupInvocations: 1024, Tier: vk.TierFP16,
		CooperativeMatrix: true, CooperativeMatrixUsable: true, CooperativeMatrixShapes: [][3]uint32{{8, 8, 8}},
		CooperativeMatrix2: &vk.CoopMat2{FlexibleDimensions: true, Reductions: true, Conversions: true, PerElementOperations: true,
			MaxDimension: 1024, Flexible: []vk.CoopMat2Granularity{{M: 8, N: 8, K: 8}}}}
	lvpNoMax := lvp
	noMax := *lvp.CooperativeMatrix2
	noMax.MaxDimension = 0
	lvpNoMax.CooperativeMatrix2 = &noMax
	gpu := vk.Info{Name: "a GPU", Type: vk.TypeDiscrete, SubgroupSize: 32, MaxSharedMemory: 49152,
		MaxWorkgroupSize: [3]uint32{1024, 1024, 64}, MaxWorkgroupInvocations: 1024, Tier: vk.TierFP16,
		CooperativeMatrix: true, CooperativeMatrixUsable: true, CooperativeMatrixShapes: [][3]uint32{{16, 16, 16}},
		CooperativeMatrixBF16Usable: true, CooperativeMatrixBF16Shapes: [][3]uint32{{16, 16, 16}},
		CooperativeMatrix2: &vk.CoopMat2{WorkgroupScope: true, FlexibleDimensions: true, Reductions: true, Conversions: true,
			PerElementOperations: true, TensorAddressing: true, BlockLoads: true, MaxDimension: 256, WorkgroupMaxSize: 256,
			Flexible: []vk.CoopMat2Granularity{{M: 16, N: 8, K: 16}, {M: 16, N: 16, K: 16, Workgroup: true, Invocations: 256},
				{M: 16, N: 16, K: 16, BF16: true, Workgroup: true, Invocations: 256}}}}
	noWG := gpu
	cm2 := *gpu.CooperativeMatrix2
	cm2.TensorAddressing = false
	noWG.CooperativeMatrix2 = &cm2
	type want struct {
		ok          bool
		kernel      string
		tile, shape [3]int
		wg          int
	}
	for _, c := range []struct {
		name    string
		info    vk.Info
		m, n, k int
		da, db  tensor.DType
		want    want
	}{
		{"lavapipe", lvp, 1024, 1024, 1024, mmF16, mmF16, want{true, "matmul_cm2", [3]int{64, 64, 32}, [3]int{32, 32, 32}, 32}},
		{"no largest dimension", lvpNoMax, 1024, 1024, 1024, mmF16, mmF16, want{true, "matmul_cm2", [3]int{64, 64, 32}, [3]int{8, 8, 8}, 32}},
		{"lavapipe bf16", lvp, 1024, 1024, 1024, mmBF16, mmBF16, want{}},
		{"gpu 4096", gpu, 4096, 4096, 4096, mmF16, mmF16, want{true, "matmul_cm2_wg", [3]int{128, 128, 32}, [3]int{}, 256}},
		{"gpu small", gpu, 100, 70, 33, mmF16, mmF16, want{true, "matmul_cm2_wg", [3]int{64, 64, 32}, [3]int{}, 256}},
		{"gpu bf16", gpu, 4096, 4096, 4096, mmBF16, mmBF16, want{true, "matmul_cm2_wg_bf16", [3]int{128, 128, 32}, [3]int{}, 256}},
		{"gpu fp32", gpu, 4096, 4096, 4096, mmF32, mmF32, want{}},
		{"no tensor addressing", noWG, 4096, 4096, 4096, mmF16, mmF16, want{true, "matmul_cm2", [3]int{128, 128, 32}, [3]int{64, 32, 32}, 256}},
	} {
		kernel, tile, shape, wg, ok := tensor.Coopmat2Plan(c.info, 1, c.m, c.n, c.k, c.da, c.db)
		got := want{ok: ok}
		if ok {
			got = want{true, kernel, tile, shape, wg}
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
	if d.Info().Type == vk.TypeCPU { // a CPU driver: the rule's plan against the shared-memory kernel, at 256^3
		mmCoopSpeed(t, d, 256, []string{"auto", "shared"})
		return
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
	shared := mmKind("shared")
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

// TestMatMulCoopmat2 checks the matmuls on VK_NV_cooperative_matrix2 against
// the float64 reference: matmul_cm2 (subgroup scope: flexible dimensions,
// per-element operations) with the rule's plan and forced fragment shapes,
// matmul_cm2_wg (workgroup scope, tensor addressing) where the device has
// it, then MatMul with VKAMP_MATMUL=coopmat2.
func TestMatMulCoopmat2(t *testing.T) {
	d := devtest.Open(t)
	info := d.Info()
	c := info.CooperativeMatrix2
	if _, ok := c.Subgroup(); !ok || !info.CooperativeMatrixUsable || !c.FlexibleDimensions || !c.PerElementOperations {
		t.Skipf("feature not available, matmul_cm2 not tested: %s, VK_NV_cooperative_matrix2 %+v", mmCoopWhy(d), c)
	}
	// CPU drivers compile each specialisation for seconds: the short list.
	short := testing.Short() || info.Type == vk.TypeCPU
	// The rule's plan (on lavapipe a subgroup's whole part of the tile, 32x32x32,
	// as one fragment), the granularity itself and one shape between.
	for _, v := range []string{"cm2", "cm2-tile=64x64x32/2x2/shape=8x8x8", "cm2-tile=64x64x16/2x2/shape=16x32x16"} {
		t.Run(v, func(t *testing.T) { mmCoopRunAll(t, d, mmCoopCases(short), mmCoopVariant(v)) })
	}
	t.Run("workgroup", func(t *testing.T) {
		if _, ok := c.Workgroup(false); !ok || !c.WorkgroupScope || !c.TensorAddressing {
			t.Skipf("feature not available, matmul_cm2_wg not run: VK_NV_cooperative_matrix2 %+v", c)
		}
		mmCoopRunAll(t, d, mmCoopCases(short), mmCoopVariant("cm2-wg"))
		if _, ok := c.Workgroup(true); ok && info.CooperativeMatrixBF16Usable {
			mmCoopRunAll(t, d, mmCoopBF16Cases(short), mmCoopVariant("cm2-wg"))
		}
	})
	t.Run("MatMul", func(t *testing.T) {
		a := mmUpload(t, d, make([]float32, 64*64), mmF16, 64, 64)
		want := "matmul_cm2"
		if _, ok := c.Workgroup(false); ok && c.WorkgroupScope && c.TensorAddressing {
			want = "matmul_cm2_wg"
		}
		if k, err := tensor.MatMulKernel(d, a, a, tensor.MatMulOpts{Kind: "coopmat2"}); err != nil || k != want {
			t.Fatalf("Kind coopmat2: fp16 runs %q (%v), want %s", k, err, want)
		}
		mmCoopRunAll(t, d, mmCoopCases(true)[:4], mmKind("coopmat2"))
	})
}

// TestMatMulCoopCandidates checks the autotuner's matmul_coop candidates on
// a device described by hand: tiles over every shape it lists, each one the
// plan rule accepts, none repeated.
func TestMatMulCoopCandidates(t *testing.T) {
	info := vk.Info{Name: "a GPU", Type: vk.TypeDiscrete, SubgroupSize: 32, MaxSharedMemory: 49152,
		MaxWorkgroupSize: [3]uint32{1024, 1024, 64}, MaxWorkgroupInvocations: 1024, Tier: vk.TierFP16,
		CooperativeMatrix: true, CooperativeMatrixUsable: true, CooperativeMatrixShapes: [][3]uint32{{16, 8, 16}, {16, 16, 16}}}
	cs := tensor.MatMulCandidates(info, "matmul_coop")
	shapes := map[[3]int]int{}
	seen := map[tensor.MatMulTile]bool{}
	for _, c := range cs {
		shapes[[3]int{c.CM, c.CN, c.CK}]++
		if seen[c] || c.WG != c.WarpsM*c.WarpsN*32 || c.TM != 1 || c.TN != c.CM*c.CN/32 || c.BK%c.CK != 0 {
			t.Errorf("candidate %+v: repeated or inconsistent", c)
		}
		seen[c] = true
	}
	if shapes[[3]int{16, 16, 16}] == 0 || shapes[[3]int{16, 8, 16}] == 0 || len(shapes) != 2 {
		t.Errorf("candidates cover shapes %v, want both of the device's", shapes)
	}
	info.CooperativeMatrixUsable = false
	if cs := tensor.MatMulCandidates(info, "matmul_coop"); len(cs) != 0 {
		t.Errorf("no usable cooperative matrices: %d candidates", len(cs))
	}
}
