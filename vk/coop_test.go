package vk_test

import (
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/vk"
)

// TestCooperativeMatrixInfo checks that Info's cooperative-matrix fields
// agree with each other, that a device which offers cooperative matrices
// opens with them enabled, and that a lower tier turns them off.
func TestCooperativeMatrixInfo(t *testing.T) {
	d := devtest.Open(t)
	info := d.Info()
	t.Logf("%s: VK_KHR_cooperative_matrix %v, fp16 x fp16 -> fp32 shapes %v, bf16 %v, usable %v, bf16 %v",
		info.Name, info.CooperativeMatrix, info.CooperativeMatrixShapes, info.CooperativeMatrixBF16Shapes,
		info.CooperativeMatrixUsable, info.CooperativeMatrixBF16Usable)
	if info.CooperativeMatrixUsable && (!info.CooperativeMatrix || len(info.CooperativeMatrixShapes) == 0 || d.Tier() < vk.TierFP16) {
		t.Errorf("usable without the extension, a shape or the fp16 tier: %+v, tier %s", info, d.Tier())
	}
	if info.CooperativeMatrixBF16Usable && (!info.CooperativeMatrixUsable || len(info.CooperativeMatrixBF16Shapes) == 0) {
		t.Errorf("bf16 usable without fp16 cooperative matrices or a bf16 shape: %+v", info)
	}
	devs, err := vk.Devices()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range devs {
		if p.Index == info.Index && p.CooperativeMatrixUsable && d.Tier() == vk.TierFP16 && !info.CooperativeMatrixUsable {
			t.Errorf("%s offers cooperative matrices, but the device did not enable them", p.Name)
		}
	}
	if !info.CooperativeMatrixUsable {
		t.Skipf("feature not available: no usable cooperative matrices on %s", info.Name)
	}
	low := devtest.Open(t, vk.Options{Tier: "storage16"})
	if low.Info().CooperativeMatrixUsable || low.Info().CooperativeMatrixBF16Usable {
		t.Error("tier storage16: cooperative matrices still usable")
	}
}
