package tensor

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/vkamp/vkamp/vk"
)

// Test hooks for matmul_coop: they run a MatMul problem on a chosen
// matmul_coop plan, whatever MatMul itself would choose, so that the kernel
// (and its CPU emulation, matmul_coop_emu) can be checked directly.

// CoopPlan describes the plan mmCoopPlan makes for a problem on a device
// described by info: ok is false when matmul_coop does not take it.
func CoopPlan(info vk.Info, batch, m, n, k int, transA, transB, f16A, f16B bool) (kernel string, spec map[uint32]uint32, rows, cols int, ok bool) {
	g := mmGeom{batch: batch, m: m, n: n, k: k, transA: transA, transB: transB}
	if f16A {
		g.aMode = mmModeF16
	}
	if f16B {
		g.bMode = mmModeF16
	}
	pl, ok := mmCoopPlan(info, g)
	return pl.kernel, pl.spec, pl.rows, pl.cols, ok
}

// CoopVariants are the variants MatMulCoop runs: the rule's own plan, each
// tile forced, and each tile on the emulation (32-wide emulated subgroups).
// MatMulCoop also takes "tile=BMxBNxBK/WMxWN" and "emu-tile=...": any tile
// of WM x WN subgroups.
var CoopVariants = []string{"auto", "large", "small", "emu-large", "emu-small"}

// MatMulCoop is MatMul on matmul_coop (or matmul_coop_emu) with the plan of
// variant (see CoopVariants). A and B must be fp16.
func MatMulCoop(a, b *Tensor, o MatMulOpts, variant string) *Tensor {
	const op = "MatMul"
	c := o.C
	if o.Beta == 0 {
		c = nil
	}
	ts := []*Tensor{a, b}
	for _, t := range []*Tensor{c, o.Bias} {
		if t != nil {
			ts = append(ts, t)
		}
	}
	sameDevice(op, ts...)
	g := mmShapes(a, b, o)
	outShape := append(slices.Clone(a.shape[:len(a.shape)-2]), g.m, g.n)
	out := newOut(a.dev, o.Out, outShape, ts...)
	if out.err != nil {
		return out
	}
	info := a.dev.Info()
	g.aMode = mmMode(a.dtype, mmShared, g.transA, g.m, g.k)
	g.bMode = mmMode(b.dtype, mmShared, !g.transB, g.n, g.k)
	if g.aMode == mmModeF32 || g.bMode == mmModeF32 {
		out.fail(fmt.Errorf("tensor: MatMulCoop: A and B must be fp16"))
		return out
	}
	var pl mmPlan
	ok := false
	tile := map[bool]mmCoopTile{true: mmCoopLarge, false: mmCoopSmall}
	switch variant {
	case "auto":
		pl, ok = mmCoopPlan(info, g)
	case "large", "small":
		if info.CooperativeMatrixUsable {
			pl, ok = mmCoopPlanTile(info, g, tile[variant == "large"], "matmul_coop", int(info.SubgroupSize))
		}
	case "emu-large", "emu-small":
		t := tile[variant == "emu-large"]
		if pl, ok = mmCoopPlanTile(info, g, t, "matmul_coop_emu", 32); !ok {
			t.bk = 16 // CPU drivers may have 32 KiB of shared memory
			pl, ok = mmCoopPlanTile(info, g, t, "matmul_coop_emu", 32)
		}
	default:
		var t mmCoopTile
		emu := strings.HasPrefix(variant, "emu-")
		if _, err := fmt.Sscanf(strings.TrimPrefix(variant, "emu-"), "tile=%dx%dx%d/%dx%d", &t.bm, &t.bn, &t.bk, &t.warpsM, &t.warpsN); err == nil {
			if emu {
				pl, ok = mmCoopPlanTile(info, g, t, "matmul_coop_emu", 32)
			} else if info.CooperativeMatrixUsable {
				pl, ok = mmCoopPlanTile(info, g, t, "matmul_coop", int(info.SubgroupSize))
			}
		}
	}
	if !ok {
		out.fail(fmt.Errorf("tensor: MatMulCoop: no %s plan on %s", variant, info.Name))
		return out
	}

	// As MatMul launches a plan.
	alpha := o.Alpha
	if alpha == 0 {
		alpha = 1
	}
	var flags uint32
	cbind, bbind := a, a
	if c != nil {
		flags |= mmFlagC | mmF16Flag(c.dtype, mmFlagCF16)
		cbind = c
	}
	if o.Bias != nil {
		flags |= mmFlagBias | mmF16Flag(o.Bias.dtype, mmFlagBiasF16)
		bbind = o.Bias
	}
	flags |= mmF16Flag(o.Out, mmFlagOutF16)
	batchB := uint32(g.k * g.n)
	if len(b.shape) == 2 {
		batchB = 0
	}
	gx, gy := ceilDiv(g.n, pl.cols), ceilDiv(g.m, pl.rows)
	maxZ := int(info.MaxWorkgroupCount[2])
	for b0 := 0; b0 < g.batch; b0 += maxZ {
		nz := min(g.batch-b0, maxZ)
		push := []uint32{uint32(g.m), uint32(g.n), uint32(g.k), uint32(g.m * g.k), batchB,
			uint32(b0), uint32(g.batch), flags, math.Float32bits(alpha), math.Float32bits(o.Beta)}
		launch(out, pl.kernel, pl.spec, [3]uint32{uint32(gx), uint32(gy), uint32(nz)}, push, a, b, cbind, bbind, out)
	}
	return out
}
