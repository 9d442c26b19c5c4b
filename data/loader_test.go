package data_test

import (
	"fmt"
	"log"
	"slices"
	"testing"

	"github.com/vkamp/vkamp/data"
	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/mnist"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// counting is a Source of n samples whose input is [i, i+0.5] and target i.
func counting(t *testing.T, n int) *data.Slices {
	t.Helper()
	x, y := make([]float32, 0, 2*n), make([]int32, 0, n)
	for i := range n {
		x = append(x, float32(i), float32(i)+0.5)
		y = append(y, int32(i))
	}
	s, err := data.NewSlices(x, y, []int{2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// epochs reads k epochs of l and returns each epoch's targets, checking
// every input against its target.
func epochs(t *testing.T, l *data.Loader, k int) [][]int32 {
	t.Helper()
	var out [][]int32
	for e := range k {
		var got []int32
		for i := 0; ; i++ {
			b, ok, err := l.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			if b.Epoch != e || b.Index != i {
				t.Fatalf("batch %d of epoch %d says epoch %d, index %d", i, e, b.Epoch, b.Index)
			}
			y, err := b.Y.Int32s()
			if err != nil {
				t.Fatal(err)
			}
			x, err := tensor.Cast(b.X, tensor.Float32).Float32s()
			if err != nil {
				t.Fatal(err)
			}
			for j, v := range y {
				if x[2*j] != float32(v) || x[2*j+1] != float32(v)+0.5 {
					t.Fatalf("sample %d: input %v", v, x[2*j:2*j+2])
				}
			}
			if len(y) != b.Size {
				t.Fatalf("batch of %d samples holds %d", b.Size, len(y))
			}
			got = append(got, y...)
		}
		out = append(out, got)
	}
	return out
}

// TestLoaderOrder: in order, every sample once per epoch with the last
// batch partial, or left out with DropLast; shuffled, every epoch a
// permutation of its own, the same for the same seed, background or not;
// a 16-bit XDType rounds the inputs.
func TestLoaderOrder(t *testing.T) {
	d := devtest.Open(t)
	src := counting(t, 10)
	open := func(o data.Options) *data.Loader {
		t.Helper()
		l, err := data.New(d, src, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	all := []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	for _, sync := range []bool{false, true} {
		got := epochs(t, open(data.Options{Batch: 4, Sync: sync}), 2)
		if !slices.Equal(got[0], all) || !slices.Equal(got[1], all) {
			t.Errorf("sync %v: in order: %v", sync, got)
		}
		got = epochs(t, open(data.Options{Batch: 4, DropLast: true, Sync: sync}), 1)
		if !slices.Equal(got[0], all[:8]) {
			t.Errorf("sync %v: DropLast: %v", sync, got)
		}
	}
	a := epochs(t, open(data.Options{Batch: 3, Shuffle: true, Seed: 5}), 3)
	b := epochs(t, open(data.Options{Batch: 3, Shuffle: true, Seed: 5, Sync: true}), 3)
	for e := range a {
		if !slices.Equal(a[e], b[e]) {
			t.Errorf("epoch %d: %v in the background, %v in Next", e, a[e], b[e])
		}
		if sorted := slices.Sorted(slices.Values(a[e])); !slices.Equal(sorted, all) {
			t.Errorf("epoch %d is no permutation: %v", e, a[e])
		}
	}
	if slices.Equal(a[0], a[1]) || slices.Equal(a[0], all) {
		t.Errorf("shuffled epochs %v and %v", a[0], a[1])
	}
	h := open(data.Options{Batch: 10, XDType: tensor.BFloat16})
	bt, _, err := h.Next()
	if err != nil || bt.X.DType() != tensor.BFloat16 {
		t.Fatalf("bf16 inputs: %v, %v", bt.X, err)
	}
	epochs(t, h, 0)
}

// TestLoaderOverlap runs a step on each batch while the loader prepares
// the next in the background, and sums every input on the device: a batch
// written into a pair before its step ran would change the sum.
func TestLoaderOverlap(t *testing.T) {
	d := devtest.Open(t)
	const n, batch = 1000, 50
	src := counting(t, n)
	l, err := data.New(d, src, data.Options{Batch: batch, Shuffle: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	acc := tensor.Zeros(d, tensor.Float32, 2)
	defer acc.Release()
	rp := tensor.NewReplayer(d)
	defer rp.Close()
	flag := tensor.Zeros(d, tensor.Float32, 1)
	defer flag.Release()
	for e := range 3 {
		for {
			b, ok, err := l.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			// Several kernels per step, so the device is busy when the next
			// batch is written.
			step := func() error {
				s := tensor.SumAxes(b.X, []int{0}, false)
				defer s.Release()
				return tensor.AxpyUnless(1, s, acc, flag)
			}
			if err := rp.Step(fmt.Sprint(b.Size), step); err != nil {
				t.Fatalf("epoch %d: %v", e, err)
			}
		}
	}
	got, err := acc.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	want := float32(3 * n * (n - 1) / 2)
	if got[0] != want || got[1] != want+3*n*0.5 {
		t.Errorf("sums %v, want %g and %g", got, want, want+3*n*0.5)
	}
	if rp.Replayed == 0 {
		t.Errorf("no step replayed (%d recorded, %d captured: %s)", rp.Recorded, rp.Captured, rp.LastDiverted)
	}
}

// TestLoaderSources: MNIST images as rows or [1 28 28], labels as targets;
// token blocks with targets shifted by one; Random draws without end.
func TestLoaderSources(t *testing.T) {
	d := devtest.Open(t)
	train, _, err := mnist.Load("../testdata/mnist")
	if err != nil {
		t.Fatal(err)
	}
	set := train.Subset(100)
	src, err := data.MNIST(set, 1, 28, 28)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := data.MNIST(set, 27, 28); err == nil {
		t.Error("MNIST of shape [27 28]: no error")
	}
	l, err := data.New(d, src, data.Options{Batch: 8, XDType: tensor.Float16})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	b, _, err := l.Next()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.X.Shape(), []int{8, 1, 28, 28}) || !slices.Equal(b.Y.Shape(), []int{8}) {
		t.Errorf("MNIST batch shapes %v, %v", b.X.Shape(), b.Y.Shape())
	}
	y, _ := b.Y.Int32s()
	for i, v := range y {
		if v != int32(set.Labels[i]) {
			t.Errorf("label %d: %d, want %d", i, v, set.Labels[i])
		}
	}

	toks := make([]int32, 200)
	for i := range toks {
		toks[i] = int32(i * 7 % 65)
	}
	tl, err := data.New(d, &data.Tokens{Data: toks, Block: 16}, data.Options{Batch: 4, Random: true, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	for range 30 { // Random has no epochs
		b, ok, err := tl.Next()
		if err != nil || !ok {
			t.Fatalf("random batch: %v, %v", ok, err)
		}
		x, _ := b.X.Int32s()
		y, _ := b.Y.Int32s()
		for r := range 4 {
			if !slices.Equal(x[16*r+1:16*r+16], y[16*r:16*r+15]) {
				t.Fatalf("row %d: targets %v are not the inputs %v shifted", r, y[16*r:16*r+16], x[16*r:16*r+16])
			}
		}
	}
	if _, err := data.New(d, &data.Tokens{Data: toks, Block: 16}, data.Options{Batch: 4, XDType: tensor.Float16}); err == nil {
		t.Error("fp16 token ids: no error")
	}
	if _, err := data.New(d, src, data.Options{}); err == nil {
		t.Error("batch 0: no error")
	}
	tl.Close()
	if _, _, err := tl.Next(); err != data.ErrClosed {
		t.Errorf("Next after Close: %v", err)
	}
}

// A loader of MNIST digits in batches of 64, shuffled each epoch, the next
// batch prepared and uploaded in the background while a step runs.
func ExampleLoader() {
	d, err := vk.Open(vk.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	train, _, err := mnist.Load("../testdata/mnist")
	if err != nil {
		log.Fatal(err)
	}
	src, err := data.MNIST(train)
	if err != nil {
		log.Fatal(err)
	}
	l, err := data.New(d, src, data.Options{Batch: 64, Shuffle: true, Seed: 1, DropLast: true, XDType: tensor.Float16})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	steps := 0
	for {
		b, ok, err := l.Next()
		if err != nil {
			log.Fatal(err)
		}
		if !ok {
			break // the epoch's end; the next call starts another
		}
		_ = b // a training step on b.X (fp16 [64 784]) and b.Y (int32 [64])
		steps++
	}
	fmt.Println(steps, "steps of 64 digits")
	// Output: 125 steps of 64 digits
}
