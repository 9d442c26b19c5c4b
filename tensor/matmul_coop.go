package tensor

import (
	"slices"

	"github.com/vkamp/vkamp/vk"
)

// matmul_coop: the matmul on cooperative matrices (tensor cores), for
// devices with VK_KHR_cooperative_matrix: fp16 inputs (matmul_coop) or bf16
// ones (matmul_coop_bf16, with VK_KHR_shader_bfloat16), fp32 accumulators,
// in any subgroup shape the device lists whose sides are multiples of 8
// (shaders/include/matmul_coop.glsl).

// mmModeF16x8 is matmul_coop's operand mode (AMode and BMode) for 16-bit
// elements read 8 at a time along the contiguous dimension; the others are
// read one element at a time (mmModeF16).
const mmModeF16x8 = 3

// matmul_coop's workgroup tiles: BM x BN outputs computed by WarpsM x
// WarpsN subgroups, k steps of BK (mmCoopPlanTile fills in the rest). The k
// step is 32: two to four fragment products per shared-memory stage.
var (
	mmCoopLarge = mmTile{BM: 128, BN: 128, BK: 32, WarpsM: 2, WarpsN: 4} // 8 subgroups
	mmCoopSmall = mmTile{BM: 64, BN: 64, BK: 32, WarpsM: 2, WarpsN: 2}   // 4 subgroups
)

// mmCoopShapes are the device's subgroup shapes for 16-bit inputs of dtype
// bf16 (else fp16) when its cooperative matrices take them, largest first
// (more products per instruction), the device's order among equals.
func mmCoopShapes(info vk.Info, bf16 bool) [][3]uint32 {
	ss := info.CooperativeMatrixShapes
	if bf16 {
		if !info.CooperativeMatrixBF16Usable {
			return nil
		}
		ss = info.CooperativeMatrixBF16Shapes
	} else if !info.CooperativeMatrixUsable {
		return nil
	}
	ss = slices.Clone(ss)
	slices.SortStableFunc(ss, func(a, b [3]uint32) int { return int(b[0]*b[1]*b[2]) - int(a[0]*a[1]*a[2]) })
	return ss
}

// mmCoopPlan returns the matmul_coop plan for g when the device runs
// cooperative matrices for its inputs: A and B both fp16, or both bf16 on a
// device with bf16 cooperative matrices (g.aMode and g.bMode must already
// be set). Any problem shape, transpose, batch and epilogue works: edges are
// clamped or zero-filled and the stores masked.
//
// Large outputs take 128x128 tiles of 8 subgroups, smaller ones (fewer
// 128x128 tiles than about one per multiprocessor of a large GPU) 64x64
// tiles of 4. The subgroup shape is the largest the device lists that the
// tile and the subgroup size fit. Operands whose contiguous dimension is a
// multiple of 8 (K for A, N for B; M for a transposed A, K for a transposed
// B) are read 8 elements at a time, others one element at a time.
func mmCoopPlan(info vk.Info, g mmGeom) (mmPlan, bool) {
	bf16 := g.aMode == mmModeBF16 && g.bMode == mmModeBF16
	if !bf16 && (g.aMode != mmModeF16 && g.aMode != mmModeF16x2 || g.bMode != mmModeF16 && g.bMode != mmModeF16x2) {
		return mmPlan{}, false // fp32, or fp16 with bf16
	}
	kind := mmCoop
	if bf16 {
		kind = mmCoopBF16
	}
	tile := mmCoopSmall
	if g.m >= 128 && g.n >= 128 && g.batch*ceilDiv(g.m, 128)*ceilDiv(g.n, 128) >= 128 {
		tile = mmCoopLarge
	}
	for _, shape := range mmCoopShapes(info, bf16) {
		for _, t := range []mmTile{tile, mmCoopSmall} {
			if pl, ok := mmCoopPlanTile(info, g, t, shape, kind, int(info.SubgroupSize)); ok {
				return pl, true
			}
		}
	}
	return mmPlan{}, false
}

// mmCoopPlanTile is the plan for tile t (BM, BN, BK, WarpsM, WarpsN) on
// fragments of shape (CM, CN, CK), if the device's limits allow it. kind is
// mmCoop or mmCoopBF16, or mmCoopEmu in tests (where sg is the emulated
// subgroup size).
func mmCoopPlanTile(info vk.Info, g mmGeom, t mmTile, shape [3]uint32, kind mmKind, sg int) (mmPlan, bool) {
	cm, cn, ck := int(shape[0]), int(shape[1]), int(shape[2])
	t.CM, t.CN, t.CK = cm, cn, ck
	wg := t.WarpsM * t.WarpsN * sg
	if cm == 0 || cn == 0 || ck == 0 || cm%8 != 0 || cn%8 != 0 || ck%8 != 0 || // fragments start on whole uvec4s
		sg <= 0 || cm*cn%sg != 0 || cn%(cm*cn/sg) != 0 || // the epilogue's rows: TN = CM*CN/SG divides CN
		wg > int(min(info.MaxWorkgroupInvocations, info.MaxWorkgroupSize[0])) ||
		int(info.MaxSharedMemory) < mmCoopShared(t) ||
		t.BK%ck != 0 || t.BK > min(t.BM, t.BN) ||
		t.BM*t.BK/8%wg != 0 || t.BN*t.BK/8%wg != 0 || // whole chunks per invocation
		t.BM%(cm*t.WarpsM) != 0 || t.BN%(cn*t.WarpsN) != 0 ||
		t.WarpsM*t.WarpsN*cm*cn*4 > mmCoopShared(t) { // the epilogue's fragments fit the tiles' memory
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
	// Each invocation stores CM*CN/sg values of a fragment: TM x TN is
	// 1 x CM*CN/sg.
	t.WG, t.TM, t.TN, t.SG = wg, 1, cm*cn/sg, sg
	pl := mmPlan{kind: kind, tile: t, transA: g.transA, transB: g.transB, aMode: modeA, bMode: modeB}
	pl.emuBF16 = kind == mmCoopEmu && g.aMode == mmModeBF16
	return pl, true
}

// mmCoopShared is the shared memory of a tile in bytes: two stages of the A
// and B tiles, rows padded by 8 elements, as the shader declares it.
func mmCoopShared(t mmTile) int {
	return 2 * (t.BM + t.BN) * (t.BK/8 + 1) * 16
}
