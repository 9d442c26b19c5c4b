package checkpoint_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/vkamp/vkamp/checkpoint"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Training state beside the weights: saved atomically like them.
func ExampleSaveJSON() {
	dir, err := os.MkdirTemp("", "checkpoint")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	type state struct {
		Step  int
		Scale float32
	}
	path := filepath.Join(dir, "state.json")
	if err := checkpoint.SaveJSON(path, state{Step: 1200, Scale: 32768}); err != nil {
		log.Fatal(err)
	}
	var s state
	if err := checkpoint.LoadJSON(path, &s); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%+v\n", s)
	// Output: {Step:1200 Scale:32768}
}

// Save writes weights that PyTorch reads with safetensors.torch.load_file;
// Load restores them into tensors of the same names, shapes and dtypes.
func ExampleSave() {
	d, err := vk.Open(vk.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	w := tensor.FromFloat32(d, []float32{1, 2, 3, 4, 5, 6}, 2, 3)
	defer w.Release()
	meta := map[string]string{"step": "1200"}
	if err := checkpoint.Save("model.safetensors", []checkpoint.Named{{Name: "fc.weight", T: w}}, meta); err != nil {
		log.Fatal(err)
	}

	w2 := tensor.New(d, tensor.Float32, 2, 3)
	defer w2.Release()
	if err := checkpoint.Load("model.safetensors", []checkpoint.Named{{Name: "fc.weight", T: w2}}); err != nil {
		log.Fatal(err) // a *checkpoint.MismatchError lists every difference
	}
}

// A non-strict load, as PyTorch's load_state_dict(strict=False): a body
// saved in fp16 is loaded into an fp32 model whose head is new.
func ExampleLoadWith() {
	d, err := vk.Open(vk.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	dir, err := os.MkdirTemp("", "vkamp-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "pretrained.safetensors")
	body := tensor.Cast(tensor.FromFloat32(d, []float32{0.5, 1.5, 2.5, 3.5}, 2, 2), tensor.Float16)
	oldHead := tensor.FromFloat32(d, []float32{1, 2}, 2)
	defer body.Release()
	defer oldHead.Release()
	if err := checkpoint.Save(path, []checkpoint.Named{{Name: "body.weight", T: body}, {Name: "head.weight", T: oldHead}}, nil); err != nil {
		log.Fatal(err)
	}

	w := tensor.New(d, tensor.Float32, 2, 2)      // the body, in fp32
	newHead := tensor.Zeros(d, tensor.Float32, 3) // a new head: not in the file
	defer w.Release()
	defer newHead.Release()
	res, err := checkpoint.LoadWith(path, []checkpoint.Named{{Name: "body.weight", T: w}, {Name: "classifier.weight", T: newHead}},
		checkpoint.LoadOptions{NonStrict: true, Convert: true})
	if err != nil {
		log.Fatal(err)
	}
	v, _ := w.Float32s()
	fmt.Println("body:", v)
	fmt.Println("missing:", res.Missing, "unexpected:", res.Unexpected)
	// Output:
	// body: [0.5 1.5 2.5 3.5]
	// missing: [classifier.weight] unexpected: [head.weight]
}
