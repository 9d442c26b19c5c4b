package vk_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/vk"
)

// TestOpenChecksEnv sets each VKAMP_* variable to values the device can and
// cannot take, and checks that Open refuses the bad ones, naming the
// variable, its value and what it accepts, rather than failing later (at the
// first matmul) or ignoring a typo.
func TestOpenChecksEnv(t *testing.T) {
	info := devtest.Open(t).Info() // the device as the test environment opens it
	swiftShader := strings.Contains(info.DriverName, "SwiftShader")
	shuffle := info.SubgroupInCompute && slices.Contains(info.SubgroupOperations, "shuffle") &&
		info.SubgroupSize >= 2 && info.SubgroupSize <= 64 && info.SubgroupSize&(info.SubgroupSize-1) == 0
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, value string
		opts        vk.Options
		fail        bool     // Open must fail
		want        []string // in the error, beyond NAME="value"
		skip        string   // why the case does not apply to this device
	}{
		{name: "VKAMP_MATMUL", value: "bogus", fail: true, want: []string{"shared, register, subgroup, quad, texel, coop or coopmat2"}},
		{name: "VKAMP_MATMUL", value: "COOP", fail: true, want: []string{"shared, register, subgroup, quad, texel, coop or coopmat2"}},
		{name: "VKAMP_MATMUL", value: "shared"},
		{name: "VKAMP_MATMUL", value: "register"},
		{name: "VKAMP_MATMUL", value: "coop", fail: !info.CooperativeMatrixUsable, want: []string{info.Name, "cooperative matri"}},
		{name: "VKAMP_MATMUL", value: "coopmat2", fail: info.CooperativeMatrix2 == nil || !info.CooperativeMatrixUsable, want: []string{info.Name, "VK_NV_cooperative_matrix2"}},
		{name: "VKAMP_MATMUL", value: "texel", fail: swiftShader, want: []string{"SwiftShader"}},
		{name: "VKAMP_MATMUL", value: "subgroup", fail: !shuffle, want: []string{"shuffle"}},
		{name: "VKAMP_TIER", value: "bogus", fail: true, want: []string{"packed, storage16 or fp16"}},
		{name: "VKAMP_TIER", value: "bogus", opts: vk.Options{Tier: "packed"}, fail: true, want: []string{"packed, storage16 or fp16"}},
		{name: "VKAMP_TIER", value: "packed"},
		{name: "VKAMP_TIER", value: "fp16", fail: true, want: []string{"at most tier " + info.Tier.String()},
			skip: map[bool]string{true: "the device supports fp16"}[info.Tier == vk.TierFP16]},
		{name: "VKAMP_DEVICE", value: "no-such-device", fail: true, want: []string{"devices are"}},
		{name: "VKAMP_DEVICE", value: "9999", fail: true, want: []string{"devices are"}},
		{name: "VKAMP_VALIDATION", value: "maybe", fail: true, want: []string{"1, 0, true, false"}},
		{name: "VKAMP_DETERMINISTIC", value: "maybe", fail: true, want: []string{"1, 0, true, false"}},
		{name: "VKAMP_DETERMINISTIC", value: "1"},
		{name: "VKAMP_NO_SYNC_VALIDATION", value: "maybe", fail: true, want: []string{"1, 0, true, false"}},
		{name: "VKAMP_NO_SYNC_VALIDATION", value: "0"},
		{name: "VKAMP_TUNE", value: "on", fail: true, want: []string{`"off"`}},
		{name: "VKAMP_TUNE", value: "off"},
		{name: "VKAMP_TUNE_DIR", value: file, fail: true, want: []string{"not a directory"}},
		{name: "VKAMP_TUNE_DIR", value: filepath.Join(t.TempDir(), "new")}, // made by tools/bench -autotune
		{name: "VKAMP_TEIR", value: "packed", fail: true, want: []string{"unknown", "VKAMP_TIER"}},
		{name: "VKAMP_MATMULL", value: "", fail: true, want: []string{"unknown", "VKAMP_MATMUL"}},
		{name: "vkamp_tier", value: "packed", fail: true, want: []string{"unknown", "did you mean VKAMP_TIER?"}},
	}
	for i, c := range cases {
		t.Run(c.name+"="+c.value, func(t *testing.T) {
			if c.skip != "" {
				t.Skip(c.skip)
			}
			t.Setenv(c.name, c.value)
			opts := c.opts
			opts.PipelineCacheDir = "off"
			d, err := vk.Open(opts)
			if err == nil {
				d.Close()
				if c.fail {
					t.Errorf("%d: %s=%q: Open succeeded on %s", i, c.name, c.value, info.Name)
				}
				return
			}
			if !c.fail {
				t.Fatalf("%d: %s=%q: %v", i, c.name, c.value, err)
			}
			if !errors.Is(err, vk.ErrEnvironment) {
				t.Errorf("%d: %s=%q: errors.Is(%v, vk.ErrEnvironment) is false", i, c.name, c.value, err)
			}
			msg := err.Error()
			for _, w := range append([]string{"vk: ", c.name + "=" + quote(c.value)}, c.want...) {
				if !strings.Contains(msg, w) {
					t.Errorf("%d: %s=%q: error %q does not say %q", i, c.name, c.value, msg, w)
				}
			}
		})
	}
}

func quote(s string) string { return `"` + s + `"` }
