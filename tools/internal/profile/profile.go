// Package profile prints where a run's device time went, kernel by kernel,
// for the tools' -profile flags (a device opened with vk.Options.Timestamps).
package profile

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/vkamp/vkamp/vk"
)

// Print writes the device time of each kernel d ran, longest first, as a
// share of the kernel time, after a line of the totals against wall. Kernels
// under 0.2% of the time are left out.
func Print(w io.Writer, d *vk.Device, wall time.Duration) {
	ks := d.KernelTimes()
	if len(ks) == 0 {
		fmt.Fprintln(w, "profile: the device records no kernel times")
		return
	}
	slices.SortFunc(ks, func(a, b vk.KernelTime) int { return cmp.Compare(b.Nanoseconds, a.Nanoseconds) })
	total := 0.0
	for _, k := range ks {
		total += k.Nanoseconds
	}
	st := d.Stats()
	fmt.Fprintf(w, "profile: kernels %.1fs of %.1fs wall (%.0f%%); %d dispatches, %d submits, %d host waits\n",
		total/1e9, wall.Seconds(), 100*total/float64(wall.Nanoseconds()), st.Dispatches, st.Submits, st.Waits)
	for _, k := range ks {
		if k.Nanoseconds < 0.002*total {
			break
		}
		fmt.Fprintf(w, "  %-32s %7d launches %8.2fs %5.1f%% of kernel time\n", k.Name, k.Count, k.Nanoseconds/1e9, 100*k.Nanoseconds/total)
	}
}
