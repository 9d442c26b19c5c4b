// Command bench measures vkamp on a device: matmul (fp16 and fp32, beside
// gonum on the CPU), casts and the fused check-and-unscale (beside a buffer
// copy), and AMP and fp32 training steps.
//
//	go run ./tools/bench [-device NAME] [-sizes 256,512,1024] [-json]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vkamp/vkamp/internal/bench"
	"github.com/vkamp/vkamp/vk"
)

func main() {
	device := flag.String("device", "", "device index or name substring (default: VKAMP_DEVICE, else the best)")
	sizes := flag.String("sizes", "256,512,1024", "square matmul sizes, comma-separated")
	asJSON := flag.Bool("json", false, "print one JSON object per result")
	minTime := flag.Duration("time", time.Second, "minimum time per measurement")
	elements := flag.Int("elements", 16<<20, "elements for the cast and unscale measurements")
	data := flag.String("data", "testdata/mnist", "MNIST directory for the training-step measurements (empty skips them)")
	flag.Parse()
	var ns []int
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 16384 {
			fmt.Fprintf(os.Stderr, "bench: bad size %q\n", s)
			os.Exit(2)
		}
		ns = append(ns, n)
	}
	if *elements < 1 || *elements > 1<<28 {
		fmt.Fprintln(os.Stderr, "bench: -elements must be in [1, 2^28]")
		os.Exit(2)
	}
	d, err := vk.Open(vk.Options{Device: *device})
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	defer d.Close()
	enc := json.NewEncoder(os.Stdout)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	if !*asJSON {
		info := d.Info()
		fmt.Printf("device: %s (%s), tier %s\n\n", info.Name, info.DriverName, d.Tier())
		fmt.Fprintln(tw, "benchmark\tvalue\tunit\tratio\tdetail")
	}
	err = bench.Run(d, bench.Options{Sizes: ns, MinTime: *minTime, Elements: *elements, Data: *data}, func(r bench.Result) {
		if *asJSON {
			enc.Encode(r)
			return
		}
		ratio := ""
		if r.Versus != "" {
			ratio = fmt.Sprintf("%.2fx %s", r.Ratio, r.Versus)
		}
		fmt.Fprintf(tw, "%s\t%.3g\t%s\t%s\t%s\n", r.Name, r.Value, r.Unit, ratio, r.Detail)
		fmt.Fprintf(os.Stderr, "\r%-60s", r.Name) // progress; the table comes at the end
	})
	if !*asJSON {
		fmt.Fprintf(os.Stderr, "\r%-60s\r", "")
		tw.Flush()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
