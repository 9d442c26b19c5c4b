package tensor

import "github.com/vkamp/vkamp/vk"

// matmul_coop: the matmul on cooperative matrices (tensor cores), for
// devices with VK_KHR_cooperative_matrix and a 16x16x16 fp16 x fp16 -> fp32
// subgroup shape (shaders/include/matmul_coop.glsl).

// mmModeF16x8 is matmul_coop's operand mode (AMode and BMode) for
// fp16 read 8 at a time along the contiguous dimension; the others are
// read one element at a time (mmModeF16).
const mmModeF16x8 = 3

// matmul_coop's workgroup tiles: BM x BN outputs computed by WarpsM x
// WarpsN subgroups, k steps of BK (mmCoopPlanTile fills in the rest). The k
// step is 32: two 16-deep fragment products per shared-memory stage.
var (
	mmCoopLarge = mmTile{BM: 128, BN: 128, BK: 32, WarpsM: 2, WarpsN: 4} // 8 subgroups of 4x2 fragments
	mmCoopSmall = mmTile{BM: 64, BN: 64, BK: 32, WarpsM: 2, WarpsN: 2}   // 4 subgroups of 2x2 fragments
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
	if g.aMode == mmModeF32 || g.bMode == mmModeF32 || g.aMode == mmModeBF16 || g.bMode == mmModeBF16 {
		return mmPlan{}, false // matmul_coop reads fp16 only
	}
	sg := int(info.SubgroupSize)
	if sg != 16 && sg != 32 && sg != 64 {
		return mmPlan{}, false
	}
	tile := mmCoopSmall
	if g.m >= 128 && g.n >= 128 && g.batch*ceilDiv(g.m, 128)*ceilDiv(g.n, 128) >= 128 {
		tile = mmCoopLarge
	}
	for _, t := range []mmTile{tile, mmCoopSmall} {
		if pl, ok := mmCoopPlanTile(info, g, t, mmCoop, sg); ok {
			return pl, true
		}
	}
	return mmPlan{}, false
}

// mmCoopPlanTile is the plan for tile t (BM, BN, BK, WarpsM, WarpsN), if
// the device's limits allow it. kind is mmCoop, or mmCoopEmu in tests (where
// sg is the emulated subgroup size).
func mmCoopPlanTile(info vk.Info, g mmGeom, t mmTile, kind mmKind, sg int) (mmPlan, bool) {
	wg := t.WarpsM * t.WarpsN * sg
	if wg > int(min(info.MaxWorkgroupInvocations, info.MaxWorkgroupSize[0])) ||
		int(info.MaxSharedMemory) < mmCoopShared(t) ||
		t.BK%16 != 0 || t.BK > min(t.BM, t.BN) ||
		t.BM*t.BK/8%wg != 0 || t.BN*t.BK/8%wg != 0 || // whole chunks per invocation
		t.BM%(16*t.WarpsM) != 0 || t.BN%(16*t.WarpsN) != 0 {
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
	// Each invocation stores 256/sg values of a fragment: TM x TN is
	// 1 x 256/sg.
	t.WG, t.TM, t.TN, t.SG = wg, 1, 256/sg, sg
	return mmPlan{kind: kind, tile: t, transA: g.transA, transB: g.transB, aMode: modeA, bMode: modeB}, true
}

// mmCoopShared is the shared memory of a tile in bytes: two stages of the A
// and B tiles, rows padded by 8 fp16, as the shader declares it.
func mmCoopShared(t mmTile) int {
	return 2 * (t.BM + t.BN) * (t.BK/8 + 1) * 16
}
