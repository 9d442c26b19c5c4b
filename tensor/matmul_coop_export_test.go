package tensor

import (
	"fmt"
	"strings"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// Test hooks for matmul_coop: they run a MatMul problem on a chosen
// matmul_coop plan, whatever MatMul itself would choose, so that the kernel
// (and its CPU emulation, matmul_coop_emu) can be checked directly.

// CoopPlan describes the plan mmCoopPlan makes for a problem on a device
// described by info: the kernel, the specialization it launches, and the
// output tile of a workgroup; ok is false when matmul_coop does not take it.
func CoopPlan(info vk.Info, batch, m, n, k int, transA, transB, f16A, f16B bool) (kernel string, spec kernels.MatmulCoopSpec, rows, cols int, ok bool) {
	g := mmGeom{batch: batch, m: m, n: n, k: k, transA: transA, transB: transB}
	if f16A {
		g.aMode = mmModeF16
	}
	if f16B {
		g.bMode = mmModeF16
	}
	pl, ok := mmCoopPlan(info, g)
	if !ok {
		return "", spec, 0, 0, false
	}
	rows, cols = pl.outTile()
	return pl.kind.String(), pl.coopSpec(), rows, cols, true
}

// CoopVariants are the variants MatMulCoop runs: the rule's own plan, each
// tile forced, and each tile on the emulation (32-wide emulated subgroups).
// MatMulCoop also takes "tile=BMxBNxBK/WMxWN" and "emu-tile=...": any tile
// of WM x WN subgroups.
var CoopVariants = []string{"auto", "large", "small", "emu-large", "emu-small"}

// MatMulCoop is MatMul on matmul_coop (or matmul_coop_emu) with the plan of
// variant (see CoopVariants). A and B must be fp16.
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
	g.aMode = mmMode(a.dtype, mmShared, g.transA, g.m, g.k)
	g.bMode = mmMode(b.dtype, mmShared, !g.transB, g.n, g.k)
	if a.dtype != Float16 || b.dtype != Float16 {
		out.fail(fmt.Errorf("tensor: MatMulCoop: A and B must be fp16"))
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
	switch variant {
	case "auto":
		return mmCoopPlan(info, g)
	case "large", "small":
		if info.CooperativeMatrixUsable {
			return mmCoopPlanTile(info, g, tile[variant == "large"], mmCoop, sg)
		}
	case "emu-large", "emu-small":
		t := tile[variant == "emu-large"]
		if pl, ok := mmCoopPlanTile(info, g, t, mmCoopEmu, 32); ok {
			return pl, true
		}
		t.BK = 16 // CPU drivers may have 32 KiB of shared memory
		return mmCoopPlanTile(info, g, t, mmCoopEmu, 32)
	default:
		var t mmTile
		emu := strings.HasPrefix(variant, "emu-")
		if _, err := fmt.Sscanf(strings.TrimPrefix(variant, "emu-"), "tile=%dx%dx%d/%dx%d", &t.BM, &t.BN, &t.BK, &t.WarpsM, &t.WarpsN); err == nil {
			if emu {
				return mmCoopPlanTile(info, g, t, mmCoopEmu, 32)
			} else if info.CooperativeMatrixUsable {
				return mmCoopPlanTile(info, g, t, mmCoop, sg)
			}
		}
	}
	return mmPlan{}, false
}
