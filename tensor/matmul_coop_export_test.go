package tensor

import (
	"fmt"
	"slices"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// Test hooks for matmul_coop: they run a MatMul problem on a chosen
// matmul_coop plan, whatever MatMul itself would choose, so that the kernel
// (and its CPU emulation, matmul_coop_emu) can be checked directly.

// CoopPlan describes the plan mmCoopPlan makes for a problem on a device
// described by info: the kernel, the specialization it launches, and the
// output tile of a workgroup; ok is false when matmul_coop does not take it.
// da and db are the operands' dtypes.
func CoopPlan(info vk.Info, batch, m, n, k int, transA, transB bool, da, db DType) (kernel string, spec kernels.MatmulCoopSpec, rows, cols int, ok bool) {
	g := mmGeom{batch: batch, m: m, n: n, k: k, transA: transA, transB: transB}
	g.aMode = mmMode(da, mmCoop, transA, m, k)
	g.bMode = mmMode(db, mmCoop, !transB, n, k)
	pl, ok := mmCoopPlan(info, g)
	if !ok {
		return "", spec, 0, 0, false
	}
	rows, cols = pl.outTile()
	return pl.kind.String(), pl.coopSpec(), rows, cols, true
}

// Coopmat2Plan is CoopPlan for VKAMP_MATMUL=coopmat2's plan: the kernel,
// its tile (BM, BN, BK), the fragment shape (matmul_cm2) and workgroup size.
func Coopmat2Plan(info vk.Info, batch, m, n, k int, da, db DType) (kernel string, tile, shape [3]int, wg int, ok bool) {
	g := mmGeom{batch: batch, m: m, n: n, k: k}
	g.aMode = mmMode(da, mmCoopCM2, false, m, k)
	g.bMode = mmMode(db, mmCoopCM2, true, n, k)
	pl, ok := mmCoopmat2Plan(info, g)
	t := pl.tile
	return pl.kind.String(), [3]int{t.BM, t.BN, t.BK}, [3]int{t.CM, t.CN, t.CK}, t.WG, ok
}

// CoopVariants are the variants MatMulCoop runs: the rule's own plan, each
// tile forced, and each tile on the emulation (32-wide emulated subgroups,
// 16x16x16 fragments). MatMulCoop also takes "tile=BMxBNxBK/WMxWN",
// "shape=CMxCNxCK" (the small tile on that subgroup shape, which the device
// must list) and "emu-tile=.../shape=CMxCNxCK": any tile of WM x WN
// emulated subgroups on fragments of any shape.
var CoopVariants = []string{"auto", "large", "small", "emu-large", "emu-small"}

// MatMulCoop is MatMul on matmul_coop, matmul_coop_bf16 or matmul_coop_emu
// with the plan of variant (see CoopVariants), or on matmul_cm2 ("cm2",
// "cm2-tile=.../shape=...") or matmul_cm2_wg ("cm2-wg"). A and B must be
// both fp16 or both bf16.
func MatMulCoop(a, b *Tensor, o MatMulOpts, variant string) *Tensor {
	m := mmCheck("MatMul", a, b, o)
	defer releaseAll(m.expand())
	var out *Tensor
	if err := m.inputErr(); err != nil {
		out = &Tensor{dev: a.dev, dtype: o.Out, shape: m.outShape, n: checkShape("MatMul", m.outShape), err: err}
	} else {
		out = New(a.dev, o.Out, m.outShape...)
	}
	if out.err != nil {
		return out
	}
	info := a.dev.Info()
	g := m.g
	g.aMode = mmMode(a.dtype, mmCoop, g.transA, g.m, g.k)
	g.bMode = mmMode(b.dtype, mmCoop, !g.transB, g.n, g.k)
	if a.dtype != b.dtype || a.dtype != Float16 && a.dtype != BFloat16 {
		out.fail(fmt.Errorf("tensor: MatMulCoop: A and B must be both fp16 or both bf16"))
		return out
	}
	pl, ok := coopVariantPlan(info, g, variant)
	if !ok {
		out.fail(fmt.Errorf("tensor: MatMulCoop: no %s plan on %s", variant, info.Name))
		return out
	}
	m.g = g
	m.launch(out, pl) // as MatMul launches a plan
	return out
}

// coopVariantPlan is the plan of a MatMulCoop variant.
func coopVariantPlan(info vk.Info, g mmGeom, variant string) (mmPlan, bool) {
	tile := map[bool]mmTile{true: mmCoopLarge, false: mmCoopSmall}
	sg := int(info.SubgroupSize)
	bf16 := g.aMode == mmModeBF16
	kind := mmCoop
	if bf16 {
		kind = mmCoopBF16
	}
	shapes := mmCoopShapes(info, bf16)
	// real tries t on each shape the device lists, then with half the k
	// step (CPU drivers may have 32 KiB of shared memory).
	real := func(t mmTile, shapes [][3]uint32) (mmPlan, bool) {
		for _, bk := range []int{t.BK, t.BK / 2} {
			t.BK = bk
			for _, s := range shapes {
				if pl, ok := mmCoopPlanTile(info, g, t, s, kind, sg); ok {
					return pl, true
				}
			}
		}
		return mmPlan{}, false
	}
	emu := func(t mmTile, shape [3]uint32) (mmPlan, bool) {
		if pl, ok := mmCoopPlanTile(info, g, t, shape, mmCoopEmu, 32); ok {
			return pl, true
		}
		t.BK = 16
		return mmCoopPlanTile(info, g, t, shape, mmCoopEmu, 32)
	}
	var t mmTile
	var s [3]uint32
	switch {
	case variant == "auto":
		return mmCoopPlan(info, g)
	case variant == "large", variant == "small":
		return real(tile[variant == "large"], shapes)
	case variant == "emu-large", variant == "emu-small":
		return emu(tile[variant == "emu-large"], [3]uint32{16, 16, 16})
	case scan(variant, "shape=%dx%dx%d", &s[0], &s[1], &s[2]):
		if slices.Contains(shapes, s) {
			return real(mmCoopSmall, [][3]uint32{s})
		}
	case scan(variant, "tile=%dx%dx%d/%dx%d", &t.BM, &t.BN, &t.BK, &t.WarpsM, &t.WarpsN):
		return real(t, shapes)
	case variant == "cm2":
		return mmCM2Plan(info, g)
	case variant == "cm2-wg":
		return mmCM2WGPlan(info, g)
	case scan(variant, "cm2-tile=%dx%dx%d/%dx%d/shape=%dx%dx%d", &t.BM, &t.BN, &t.BK, &t.WarpsM, &t.WarpsN, &s[0], &s[1], &s[2]):
		return mmCoopPlanTile(info, g, t, s, mmCoopCM2, sg)
	case scan(variant, "emu-tile=%dx%dx%d/%dx%d/shape=%dx%dx%d", &t.BM, &t.BN, &t.BK, &t.WarpsM, &t.WarpsN, &s[0], &s[1], &s[2]):
		return mmCoopPlanTile(info, g, t, s, mmCoopEmu, 32)
	case scan(variant, "emu-tile=%dx%dx%d/%dx%d", &t.BM, &t.BN, &t.BK, &t.WarpsM, &t.WarpsN):
		return mmCoopPlanTile(info, g, t, [3]uint32{16, 16, 16}, mmCoopEmu, 32)
	}
	return mmPlan{}, false
}

// scan reports whether all of s matches format.
func scan(s, format string, args ...any) bool {
	n, err := fmt.Sscanf(s, format, args...)
	return err == nil && n == len(args) && fmt.Sprintf(format, derefAll(args)...) == s
}

func derefAll(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch p := a.(type) {
		case *int:
			out[i] = *p
		case *uint32:
			out[i] = *p
		}
	}
	return out
}
