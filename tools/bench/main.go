// Command bench measures vkamp on a device: matmul (fp16, fp32 and bf16, beside
// gonum on the CPU), conv2d (beside matmul of the same size), the streaming
// kernels (casts, elementwise, reductions, softmax, layer norm, Adam, the
// fused unscale) in GB/s beside vkCmdCopyBuffer (copy/buffer), AMP and fp32
// training steps (train-step/amp-vs-fp32), the AMP step replayed from a
// captured graph (train-step/amp-replay-vs-amp), the host time per recorded
// dispatch (dispatch/host-us; dispatch/host-us/gpt for tools/gpt's step of
// the CPU recipe's size) and per dispatch of the same step replayed
// from a captured graph (dispatch/replay-us; dispatch/replay-us/gpt for
// tools/gpt's step of the CPU recipe's size) beside the driver's floor
// (dispatch/driver-us; dispatch/driver-switch-us with a pipeline switch and a
// barrier per launch, as a step has) and vk's own launch (dispatch/vk-us), the
// wall time of running such launches (dispatch/run-us), and
// the share of an AMP step's wall time spent in kernels (by the runtime's
// timestamps) at each -step batch.
//
//	go run ./tools/bench [-device NAME] [-sizes 256,512,1024] [-thin 8,16,32,64] [-step 64,256] [-step-only] [-conv-only] [-json]
//	go run ./tools/bench -sizes= -thin= -conv=false -step=   # streaming kernels, steps, host time
//	go run ./tools/bench -host-only [-step-n 100]             # host time per dispatch of an AMP step
//	go run ./tools/bench -run 'dispatch/host-us|stream/adam'  # only the results whose names match
//	go run ./tools/bench -autotune [-sizes 1024]   # store this device's fastest matmul tiles
//	go run ./tools/bench -forms -run 'forms/'     # each streaming kernel's forms beside its plain form
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vkamp/vkamp/mnist"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/tools/internal/bench"
	"github.com/vkamp/vkamp/vk"
)

func main() {
	device := flag.String("device", "", "device index or name substring (default: VKAMP_DEVICE, else the best)")
	sizes := flag.String("sizes", "256,512,1024", "square matmul sizes, comma-separated")
	paths := flag.String("paths", "1024", "square sizes at which fp16 and bf16 matmuls run on every matmul path the device has (VKAMP_MATMUL forced), comma-separated (empty skips)")
	thin := flag.String("thin", "8,16,32,64", "M of thin fp16 matmuls (M x 1024 by 1024 x 1024), comma-separated (empty skips)")
	autotune := flag.Bool("autotune", false, "time every matmul tile for this device, store the fastest in the user's cache directory (used by later runs), and exit")
	asJSON := flag.Bool("json", false, "print one JSON object per result")
	minTime := flag.Duration("time", time.Second, "minimum time per measurement")
	elements := flag.Int("elements", 16<<20, "elements for the streaming-kernel measurements")
	data := flag.String("data", "testdata/mnist", "MNIST directory for the training-step measurements (empty skips them)")
	steps := flag.String("step", "64,256", "batch sizes for the kernel share of AMP training steps, comma-separated (empty skips)")
	stepN := flag.Int("step-n", 50, "measured steps per -step batch size")
	stepOnly := flag.Bool("step-only", false, "measure only the kernel share of training steps")
	conv := flag.Bool("conv", true, "measure conv2d (the MNIST example's conv2 at batch 64) beside matmul of the same M, N, K")
	convOnly := flag.Bool("conv-only", false, "measure only conv2d")
	detN := flag.Int("deterministic", 256, "size of the square matmul that measures the deterministic mode's cost beside the default mode's, with MLP training steps (0 skips)")
	detOnly := flag.Bool("deterministic-only", false, "measure only the deterministic mode's cost")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	hostOnly := flag.Bool("host-only", false, "measure only the host time per dispatch (dispatch/...): the MNIST MLP's AMP step at batch 64, recorded and replayed, and the step of tools/gpt's CPU recipe, -step-n samples of each (a GPT sample is a whole step: a second or so on lavapipe)")
	forms := flag.Bool("forms", false, "measure each streaming kernel in the device's forms beside its plain form (vk.Options.PlainForms) on the same device opened again, as forms/<kernel>")
	run := flag.String("run", "", "measure and print only the results whose names match this regular expression (conv2d and deterministic ones run when it matches \"conv2d\" or \"deterministic\")")
	flag.Parse()
	sel, err := newSelection(*run)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: -run:", err)
		os.Exit(2)
	}
	ns, err := ints(*sizes, 16384)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: -sizes:", err)
		os.Exit(2)
	}
	pathNs, err := ints(*paths, 16384)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: -paths:", err)
		os.Exit(2)
	}
	thins, err := ints(*thin, 4096)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: -thin:", err)
		os.Exit(2)
	}
	batches, err := ints(*steps, 1<<16)
	if err != nil || *stepN < 1 || (*stepOnly && (len(batches) == 0 || *data == "")) {
		fmt.Fprintln(os.Stderr, "bench: -step needs batch sizes, -step-n a positive count and -data a directory:", err)
		os.Exit(2)
	}
	if *elements < 1 || *elements > 1<<28 {
		fmt.Fprintln(os.Stderr, "bench: -elements must be in [1, 2^28]")
		os.Exit(2)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: -cpuprofile:", err)
			os.Exit(2)
		}
		defer pprof.StopCPUProfile()
	}
	d, err := vk.Open(vk.Options{Device: *device})
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	defer d.Close()
	if *autotune {
		if err := tune(d, *sizes, *minTime); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			d.Close()
			os.Exit(1)
		}
		return
	}
	enc := json.NewEncoder(os.Stdout)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	if !*asJSON {
		info := d.Info()
		fmt.Printf("device: %s (%s), tier %s\n\n", info.Name, info.DriverName, d.Tier())
		fmt.Fprintln(tw, "benchmark\tvalue\tunit\tratio\tdetail")
	}
	emit := func(r bench.Result) {
		if !sel.match(r.Name) {
			return
		}
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
	}
	if *convOnly {
		*stepOnly, *conv, batches, *detN = true, true, nil, 0
	}
	if *detOnly {
		*stepOnly, *conv, batches = true, false, nil
		if *detN == 0 {
			*detN = 256
		}
	}
	runData, runHost, formsN := *data, false, *elements
	if sel.re != nil { // skip what cannot match
		if !sel.any(matmulNames(ns)) {
			ns = nil
		}
		if !sel.match("matmul-path/") {
			pathNs = nil
		}
		if !sel.any(thinNames(thins)) {
			thins = nil
		}
		if !sel.any(bench.StreamNames) {
			*elements = 0
		}
		if !sel.any(trainNames()) {
			runData, runHost = "", sel.any(hostNames()) && *data != ""
		}
		*conv = *conv && sel.match("conv2d")
		if !sel.match("deterministic") {
			*detN = 0
		}
		batches = slices.DeleteFunc(batches, func(b int) bool { return !sel.any(stepShareNames(b)) })
	}
	if *hostOnly {
		*stepOnly, *conv, batches = true, false, nil
		err = host(d, *data, *stepN, emit)
	}
	if !*stepOnly {
		err = bench.Run(d, bench.Options{Sizes: ns, PathSizes: pathNs, Thin: thins, MinTime: *minTime, Elements: *elements, Streams: sel.match, Data: runData}, emit)
		if err == nil && runHost {
			err = host(d, *data, *stepN, emit)
		}
	}
	if err == nil && *forms && sel.any(formsNames()) {
		err = streamForms(d, *device, formsN, *minTime, sel.match, emit)
	}
	if err == nil && *conv {
		err = bench.Conv(d, bench.MNISTConv2, *minTime, emit)
	}
	if err == nil && *detN > 0 && (!*stepOnly || *detOnly) {
		err = bench.Deterministic(*device, *detN, *data, *minTime, emit)
	}
	if err == nil && len(batches) > 0 && *data != "" {
		err = stepShares(*device, *data, batches, *stepN, emit)
	}
	if !*asJSON {
		fmt.Fprintf(os.Stderr, "\r%-60s\r", "")
		tw.Flush()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// streamForms opens the device again with the plain forms and measures
// every streaming kernel in both (bench.StreamForms).
func streamForms(d *vk.Device, device string, n int, minTime time.Duration, want func(string) bool, emit func(bench.Result)) error {
	plain, err := vk.Open(vk.Options{Device: device, PlainForms: true})
	if err != nil {
		return err
	}
	defer plain.Close()
	return bench.StreamForms(d, plain, n, minTime, func(name string) bool { return want("forms/" + strings.TrimPrefix(name, "stream/")) }, emit)
}

// formsNames are StreamForms' result names.
func formsNames() []string {
	var out []string
	for _, n := range bench.StreamNames[1:] {
		out = append(out, "forms/"+strings.TrimPrefix(n, "stream/"))
	}
	return out
}

// ints parses a comma-separated list of sizes in [1, limit]; empty is none.
func ints(list string, limit int) ([]int, error) {
	var ns []int
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > limit {
			return nil, fmt.Errorf("bad size %q", s)
		}
		ns = append(ns, n)
	}
	return ns, nil
}

// stepShares measures the kernel share of training steps on a device of its
// own with timestamps on, so that they cost the other measurements nothing.
func stepShares(device, data string, batches []int, steps int, emit func(bench.Result)) error {
	train, test, err := mnist.Load(data)
	if err != nil {
		return err
	}
	d, err := vk.Open(vk.Options{Device: device, Timestamps: true})
	if err != nil {
		return err
	}
	defer d.Close()
	info := d.Info()
	for _, b := range batches {
		r, err := bench.StepShare(d, train, test, bench.StepOptions{Batch: b, Steps: steps, Warmup: 5})
		if err != nil {
			return err
		}
		for _, x := range bench.StepResults(r) {
			x.Device, x.Driver, x.Tier = info.Name, info.DriverName, d.Tier().String()
			emit(x)
		}
	}
	return nil
}

// host measures the host time per dispatch of AMP steps at batch 64.
func host(d *vk.Device, data string, steps int, emit func(bench.Result)) error {
	train, test, err := mnist.Load(data)
	if err != nil {
		return err
	}
	rs, err := bench.Host(d, train, test, bench.GPTCPU, 64, steps)
	for _, r := range rs {
		emit(r)
	}
	return err
}

// tune runs the matmul autotuner at the largest -sizes size and prints what
// it stored.
func tune(d *vk.Device, sizes string, minTime time.Duration) error {
	ns, err := ints(sizes, 16384)
	if err != nil || len(ns) == 0 {
		return fmt.Errorf("-autotune needs a -sizes size: %v", err)
	}
	info := d.Info()
	fmt.Printf("autotuning matmul tiles on %s (%s)\n", info.Name, info.DriverName)
	path, t, err := tensor.AutotuneMatMul(d, tensor.AutotuneOptions{Size: slices.Max(ns), MinTime: minTime / 3,
		Log: func(s string) { fmt.Println("  " + s) }})
	if err != nil {
		return err
	}
	for _, tile := range t.Tiles {
		fmt.Printf("best %s %s: {%v}, %.1f GFLOP/s\n", tile.Class, tile.Kernel, tile, tile.GFLOPS)
	}
	fmt.Println("stored in", path)
	return nil
}
