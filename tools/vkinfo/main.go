// Command vkinfo lists the Vulkan devices vkamp can use, their capabilities,
// the tier each would run, and which one vkamp would choose.
//
//	go run ./tools/vkinfo [-json]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/vkamp/vkamp/vk"
)

func main() {
	asJSON := flag.Bool("json", false, "print JSON instead of a table")
	flag.Parse()
	if err := run(os.Stdout, *asJSON); err != nil {
		fmt.Fprintln(os.Stderr, "vkinfo:", err)
		os.Exit(1)
	}
}

type report struct {
	Devices []vk.Info `json:"devices"`
	Chosen  int       `json:"chosen"`
	Tier    vk.Tier   `json:"chosen_tier"`
}

func run(w io.Writer, asJSON bool) error {
	infos, err := vk.Devices()
	if err != nil {
		return err
	}
	rep := report{Devices: infos, Chosen: -1}
	if d, err := vk.Open(vk.Options{PipelineCacheDir: "off"}); err == nil {
		rep.Chosen, rep.Tier = d.Info().Index, d.Tier()
		d.Close()
	} else if !asJSON {
		fmt.Fprintln(w, "no device can be opened:", err)
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	for _, info := range infos {
		mark := ""
		if info.Index == rep.Chosen {
			mark = fmt.Sprintf("  <- chosen, runs tier %s", rep.Tier)
		}
		fmt.Fprintf(w, "Device %d: %s%s\n", info.Index, info.Name, mark)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		row := func(k string, v any) { fmt.Fprintf(tw, "  %s\t%v\n", k, v) }
		row("vendor / type", fmt.Sprintf("%s (0x%04x) / %s", info.Vendor, info.VendorID, info.Type))
		row("driver", strings.TrimSpace(fmt.Sprintf("%s %s", info.DriverName, info.DriverInfo)))
		row("Vulkan API", info.APIVersion)
		row("best tier", info.Tier)
		row("host-mapped memory", info.HostMapped)
		for i, h := range info.Heaps {
			row(fmt.Sprintf("heap %d", i), fmt.Sprintf("%.1f GiB%s", float64(h.Size)/(1<<30), map[bool]string{true: ", device local"}[h.DeviceLocal]))
		}
		row("shaderFloat16", info.ShaderFloat16)
		row("storageBuffer16BitAccess", info.StorageBuffer16Bit)
		row("shaderInt16", info.ShaderInt16)
		row("fp16 RTE / denorm preserve", fmt.Sprintf("%v / %v", info.RoundingRTEFloat16, info.DenormPreserveFloat16))
		row("subgroup size", info.SubgroupSize)
		row("subgroup operations", strings.Join(info.SubgroupOperations, " "))
		row("max shared memory", fmt.Sprintf("%d KiB", info.MaxSharedMemory/1024))
		row("max workgroup size", fmt.Sprintf("%v, %d invocations", info.MaxWorkgroupSize, info.MaxWorkgroupInvocations))
		row("max workgroup count", info.MaxWorkgroupCount)
		row("maxStorageBufferRange", fmt.Sprintf("%d MiB", info.MaxStorageBufferRange>>20))
		row("maxMemoryAllocationCount", info.MaxMemoryAllocationCount)
		row("maxMemoryAllocationSize", fmt.Sprintf("%d MiB", info.MaxMemoryAllocationSize>>20))
		row("storage offset alignment", info.MinStorageBufferAlign)
		row("timestamps", fmt.Sprintf("%v (%.3g ns/tick)", info.Timestamps, info.TimestampPeriod))
		coop := fmt.Sprint(info.CooperativeMatrix)
		if len(info.CooperativeMatrixShapes) > 0 {
			coop += ", f16xf16->f32 " + shapes(info.CooperativeMatrixShapes)
		}
		if len(info.CooperativeMatrixBF16Shapes) > 0 {
			coop += ", bf16xbf16->f32 " + shapes(info.CooperativeMatrixBF16Shapes)
		}
		switch {
		case info.CooperativeMatrixBF16Usable:
			coop += " (usable: matmul_coop, matmul_coop_bf16)"
		case info.CooperativeMatrixUsable:
			coop += " (usable: matmul_coop)"
		}
		row("VK_KHR_cooperative_matrix", coop)
		if c := info.CooperativeMatrix2; c != nil {
			var fs []string
			for _, f := range []struct {
				name string
				on   bool
			}{{"workgroup scope", c.WorkgroupScope}, {"flexible dimensions", c.FlexibleDimensions}, {"reductions", c.Reductions},
				{"conversions", c.Conversions}, {"per-element operations", c.PerElementOperations},
				{"tensor addressing", c.TensorAddressing}, {"block loads", c.BlockLoads}} {
				if f.on {
					fs = append(fs, f.name)
				}
			}
			for _, g := range c.Flexible {
				scope := "subgroup"
				if g.Workgroup {
					scope = fmt.Sprintf("workgroup of %d", g.Invocations)
				}
				in := "f16"
				if g.BF16 {
					in = "bf16"
				}
				fs = append(fs, fmt.Sprintf("%sx%s->f32 %dx%dx%d granules (%s)", in, in, g.M, g.N, g.K, scope))
			}
			row("VK_NV_cooperative_matrix2", strings.Join(fs, ", "))
		}
		tw.Flush()
	}
	return nil
}

// shapes lists cooperative-matrix shapes as MxNxK.
func shapes(ss [][3]uint32) string {
	var parts []string
	for _, s := range ss {
		parts = append(parts, fmt.Sprintf("%dx%dx%d", s[0], s[1], s[2]))
	}
	return strings.Join(parts, " ")
}
