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
	cm2 := kind == mmCoopCM2                                                   // an epilogue element by element, not through shared memory
	if cm == 0 || cn == 0 || ck == 0 || cm%8 != 0 || cn%8 != 0 || ck%8 != 0 || // fragments start on whole uvec4s
		sg <= 0 || !cm2 && (cm*cn%sg != 0 || cn%(cm*cn/sg) != 0) || // the epilogue's rows: TN = CM*CN/SG divides CN
		wg > int(min(info.MaxWorkgroupInvocations, info.MaxWorkgroupSize[0])) ||
		int(info.MaxSharedMemory) < mmCoopShared(t) ||
		t.BK%ck != 0 || t.BK > min(t.BM, t.BN) ||
		t.BM*t.BK/8%wg != 0 || t.BN*t.BK/8%wg != 0 || // whole chunks per invocation
		t.BM%(cm*t.WarpsM) != 0 || t.BN%(cn*t.WarpsN) != 0 ||
		!cm2 && t.WarpsM*t.WarpsN*cm*cn*4 > mmCoopShared(t) { // the epilogue's fragments fit the tiles' memory
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
	t.WG, t.TM, t.TN, t.SG = wg, 1, 1, sg
	if !cm2 {
		t.TN = cm * cn / sg
	}
	pl := mmPlan{kind: kind, tile: t, transA: g.transA, transB: g.transB, aMode: modeA, bMode: modeB}
	pl.emuBF16 = kind == mmCoopEmu && g.aMode == mmModeBF16
	return pl, true
}

// mmCM2Plan returns the matmul_cm2 plan for g on a device with
// VK_NV_cooperative_matrix2's flexible dimensions and per-element
// operations at subgroup scope, for fp16 A and B: matmul_coop's tiles,
// each subgroup's part one fragment where the device's largest flexible
// dimension allows (else fragments of its granularity), and the epilogue
// element by element.
func mmCM2Plan(info vk.Info, g mmGeom) (mmPlan, bool) {
	c := info.CooperativeMatrix2
	gr, ok := c.Subgroup()
	if !ok || !info.CooperativeMatrixUsable || !c.FlexibleDimensions || !c.PerElementOperations ||
		g.aMode != mmModeF16 && g.aMode != mmModeF16x2 || g.bMode != mmModeF16 && g.bMode != mmModeF16x2 {
		return mmPlan{}, false
	}
	tile := mmCoopSmall
	if g.m >= 128 && g.n >= 128 && g.batch*ceilDiv(g.m, 128)*ceilDiv(g.n, 128) >= 128 {
		tile = mmCoopLarge
	}
	for _, t := range []mmTile{tile, mmCoopSmall, {BM: 64, BN: 64, BK: 16, WarpsM: 2, WarpsN: 2}} {
		for _, shape := range mmCM2Shapes(c, gr, t) {
			if pl, ok := mmCoopPlanTile(info, g, t, shape, mmCoopCM2, int(info.SubgroupSize)); ok {
				return pl, true
			}
		}
	}
	return mmPlan{}, false
}

// mmCM2Shapes are the fragment shapes matmul_cm2 tries for tile t, best
// first: a subgroup's whole part of the tile and the k step as one fragment
// where the device's largest flexible dimension allows, then the
// granularity itself (all a device that reports no largest dimension gets).
func mmCM2Shapes(c *vk.CoopMat2, gr vk.CoopMat2Granularity, t mmTile) [][3]uint32 {
	whole := [3]uint32{uint32(t.BM / t.WarpsM), uint32(t.BN / t.WarpsN), uint32(t.BK)}
	var ss [][3]uint32
	if c.MaxDimension > 0 && max(whole[0], whole[1], whole[2]) <= c.MaxDimension &&
		whole[0]%gr.M == 0 && whole[1]%gr.N == 0 && whole[2]%gr.K == 0 {
		ss = append(ss, whole)
	}
	return append(ss, [3]uint32{gr.M, gr.N, gr.K})
}

// mmCM2WGPlan returns the matmul_cm2_wg plan for g on a device with all of
// VK_NV_cooperative_matrix2 that it needs (workgroup scope, tensor
// addressing, flexible dimensions, per-element operations) and a
// workgroup-scope granularity for g's inputs (fp16, or bf16 where the
// device's cooperative matrices take it): 128x128 output tiles, or 64x64
// for smaller problems, in k steps of 32, rounded to the granularity, on
// workgroups of the size the granularity names.
func mmCM2WGPlan(info vk.Info, g mmGeom) (mmPlan, bool) {
	c := info.CooperativeMatrix2
	bf16 := g.aMode == mmModeBF16 && g.bMode == mmModeBF16
	f16 := (g.aMode == mmModeF16 || g.aMode == mmModeF16x2) && (g.bMode == mmModeF16 || g.bMode == mmModeF16x2)
	gr, ok := c.Workgroup(bf16)
	if !ok || !info.CooperativeMatrixUsable || !f16 && !(bf16 && info.CooperativeMatrixBF16Usable) ||
		!c.WorkgroupScope || !c.TensorAddressing || !c.FlexibleDimensions || !c.PerElementOperations ||
		gr.M == 0 || gr.N == 0 || gr.K == 0 || gr.Invocations == 0 ||
		gr.Invocations > min(info.MaxWorkgroupInvocations, info.MaxWorkgroupSize[0]) ||
		c.WorkgroupMaxSize != 0 && gr.Invocations > c.WorkgroupMaxSize {
		return mmPlan{}, false
	}
	side := 64
	if g.m >= 128 && g.n >= 128 && g.batch*ceilDiv(g.m, 128)*ceilDiv(g.n, 128) >= 128 {
		side = 128
	}
	round := func(v int, to uint32) int { return ceilDiv(v, int(to)) * int(to) }
	t := mmTile{BM: round(side, gr.M), BN: round(side, gr.N), BK: round(32, gr.K), WG: int(gr.Invocations), TM: 1, TN: 1}
	if c.MaxDimension != 0 && uint32(max(t.BM, t.BN, t.BK)) > c.MaxDimension {
		return mmPlan{}, false
	}
	kind := mmCoopCM2WG
	if bf16 {
		kind = mmCoopCM2WGBF16
	}
	return mmPlan{kind: kind, tile: t, transA: g.transA, transB: g.transB, aMode: g.aMode, bMode: g.bMode}, true
}

// mmCoopmat2Plan is VKAMP_MATMUL=coopmat2's plan: the workgroup-scope form
// where the device has it, else the subgroup-scope one.
func mmCoopmat2Plan(info vk.Info, g mmGeom) (mmPlan, bool) {
	if pl, ok := mmCM2WGPlan(info, g); ok {
		return pl, true
	}
	return mmCM2Plan(info, g)
}

// mmCoopShared is the shared memory of a tile in bytes: two stages of the A
// and B tiles, rows padded by 8 elements, as the shader declares it.
func mmCoopShared(t mmTile) int {
	return 2 * (t.BM + t.BN) * (t.BK/8 + 1) * 16
}
