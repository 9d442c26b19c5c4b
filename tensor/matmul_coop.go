package tensor

import "github.com/vkamp/vkamp/vk"

// matmul_coop: the matmul on cooperative matrices (tensor cores), for
// devices with VK_KHR_cooperative_matrix and a 16x16x16 fp16 x fp16 -> fp32
// subgroup shape (shaders/include/matmul_coop.glsl).

// Specialization constants of matmul_coop beyond those of matmul.glsl
// (ids below 16, the most kernels.GetSpec takes).
const (
	mmSpecWarpsM = 8
	mmSpecSG     = 9
	mmSpecBM     = 10
	mmSpecBN     = 11
	mmSpecBK     = 12
	mmSpecWarpsN = 14
)

// mmModeF16x8 is matmul_coop's operand mode (spec constants 6 and 7) for
// fp16 read 8 at a time along the contiguous dimension; the others are
// read one element at a time (mmModeF16).
const mmModeF16x8 = 3

// mmCoopTile is a workgroup tile of matmul_coop: bm x bn outputs computed
// by warpsM x warpsN subgroups, k steps of bk.
type mmCoopTile struct{ bm, bn, bk, warpsM, warpsN int }

// The k step is 32: two 16-deep fragment products per shared-memory stage.
var (
	mmCoopLarge = mmCoopTile{128, 128, 32, 2, 4} // 8 subgroups of 4x2 fragments
	mmCoopSmall = mmCoopTile{64, 64, 32, 2, 2}   // 4 subgroups of 2x2 fragments
)

// mmCoopPlan returns the matmul_coop plan for g when the device runs
// cooperative matrices with a 16x16x16 fp16 x fp16 -> fp32 subgroup shape,
// of a subgroup size the kernel supports, and A and B are fp16 (g.aMode and
// g.bMode must already be set). Any shape, transpose, batch and epilogue
// works: edges are clamped or zero-filled and the stores masked.
//
// Large outputs take 128x128 tiles of 8 subgroups, smaller ones (fewer
// 128x128 tiles than about one per multiprocessor of a large GPU) 64x64
// tiles of 4. Operands whose contiguous dimension is a multiple of 8 (K for
// A, N for B; M for a transposed A, K for a transposed B) are read 8 fp16 at
// a time, others one element at a time.
func mmCoopPlan(info vk.Info, g mmGeom) (mmPlan, bool) {
	if !info.CooperativeMatrixUsable || info.CooperativeMatrixShape != [3]uint32{16, 16, 16} {
		return mmPlan{}, false
	}
	if g.aMode == mmModeF32 || g.bMode == mmModeF32 {
		return mmPlan{}, false
	}
	sg := int(info.SubgroupSize)
	if sg != 16 && sg != 32 && sg != 64 {
		return mmPlan{}, false
	}
	tile := mmCoopSmall
	if g.m >= 128 && g.n >= 128 && g.batch*ceilDiv(g.m, 128)*ceilDiv(g.n, 128) >= 128 {
		tile = mmCoopLarge
	}
	for _, t := range []mmCoopTile{tile, mmCoopSmall} {
		if pl, ok := mmCoopPlanTile(info, g, t, "matmul_coop", sg); ok {
			return pl, true
		}
	}
	return mmPlan{}, false
}

// mmCoopPlanTile is the plan for one tile, if the device's limits allow it.
// kernel is matmul_coop, or matmul_coop_emu in tests (where sg is the
// emulated subgroup size).
func mmCoopPlanTile(info vk.Info, g mmGeom, t mmCoopTile, kernel string, sg int) (mmPlan, bool) {
	wg := t.warpsM * t.warpsN * sg
	if wg > int(min(info.MaxWorkgroupInvocations, info.MaxWorkgroupSize[0])) ||
		int(info.MaxSharedMemory) < mmCoopShared(t) ||
		t.bk%16 != 0 || t.bk > min(t.bm, t.bn) ||
		t.bm*t.bk/8%wg != 0 || t.bn*t.bk/8%wg != 0 || // whole chunks per invocation
		t.bm%(16*t.warpsM) != 0 || t.bn%(16*t.warpsN) != 0 {
		return mmPlan{}, false
	}
	// 8 at a time where the contiguous dimension allows.
	modeA, modeB := uint32(mmModeF16), uint32(mmModeF16)
	if g.transA && g.m%8 == 0 || !g.transA && g.k%8 == 0 {
		modeA = mmModeF16x8
	}
	if g.transB && g.k%8 == 0 || !g.transB && g.n%8 == 0 {
		modeB = mmModeF16x8
	}
	spec := map[uint32]uint32{
		0: uint32(wg),
		1: 1, 2: uint32(256 / sg), // TM x TN: each invocation stores 256/sg values of a fragment
		4: b2u(g.transA), 5: b2u(g.transB), 6: modeA, 7: modeB,
		mmSpecWarpsM: uint32(t.warpsM), mmSpecSG: uint32(sg),
		mmSpecBM: uint32(t.bm), mmSpecBN: uint32(t.bn), mmSpecBK: uint32(t.bk), mmSpecWarpsN: uint32(t.warpsN),
	}
	return mmPlan{kernel: kernel, spec: spec, rows: t.bm, cols: t.bn}, true
}

// mmCoopShared is the shared memory of a tile in bytes: two stages of the A
// and B tiles, rows padded by 8 fp16, as the shader declares it.
func mmCoopShared(t mmCoopTile) int {
	return 2 * (t.bm + t.bn) * (t.bk/8 + 1) * 16
}
