package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"github.com/vkamp/vkamp/checkpoint"
	"github.com/vkamp/vkamp/nn"
)

// nanoGPT's weights: its model.state_dict() names a parameter of the
// model's layers "transformer." + vkamp's name (transformer.h.0.attn.c_attn.weight)
// and has the output head, lm_head.weight, tied to transformer.wte.weight,
// as vkamp's head is; without flash attention each block also holds its
// causal mask as a buffer, transformer.h.N.attn.bias. The shapes are the
// same (Linear weights [out, in], as PyTorch's).

// nanoGPTName is a parameter's name in nanoGPT's state dict.
func nanoGPTName(name string) string { return "transformer." + name }

// maskRE names nanoGPT's causal-mask buffers.
var maskRE = regexp.MustCompile(`^transformer\.h\.[0-9]+\.attn\.bias$`)

// initFrom loads a nanoGPT state dict saved as safetensors
// (safetensors.torch.save_model(model, path), or save_file of its
// state_dict) into params: fp32, fp16 or bf16, converted to the
// parameters' dtype. Every parameter must be in the file, and the file may
// hold nothing else but the tied head (equal to wte, or it is an error: an
// untied head cannot be loaded into a tied model) and the mask buffers.
func initFrom(path string, params []*nn.Param) error {
	f, err := checkpoint.Read(path)
	if err != nil {
		return err
	}
	named := make([]checkpoint.Named, len(params))
	for i, p := range params {
		named[i] = checkpoint.Named{Name: p.Name, T: p.Value}
	}
	res, err := f.FillWith(named, checkpoint.LoadOptions{NonStrict: true, Convert: true, Rename: nanoGPTName})
	if err != nil {
		return fmt.Errorf("-init-from: %w", err)
	}
	var problems []string
	if len(res.Missing) > 0 {
		problems = append(problems, fmt.Sprintf("no %s in the file (is the model's size the same? -recipe, -layers...)", strings.Join(res.Missing, ", ")))
	}
	for _, name := range res.Unexpected {
		switch {
		case maskRE.MatchString(name):
		case name == "lm_head.weight":
			head, wte := f.Tensors[name], f.Tensors["transformer.wte.weight"]
			if head.DType != wte.DType || !bytes.Equal(head.Data, wte.Data) {
				problems = append(problems, "lm_head.weight differs from transformer.wte.weight: the head is not tied, as nanoGPT's and this model's are")
			}
		default:
			problems = append(problems, fmt.Sprintf("%s is not a tensor of this model", name))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("-init-from %s: %s", path, strings.Join(problems, "; "))
	}
	return nil
}

// export writes params as a nanoGPT state dict in safetensors: the
// layers' parameters under nanoGPT's names and the tied head as
// lm_head.weight, so that nanoGPT's GPT loads it with
// model.load_state_dict(safetensors.torch.load_file(path), strict=False)
// (strict=False for the mask buffers a model without flash attention
// holds, which are not weights).
func export(path string, params []*nn.Param) error {
	var named []checkpoint.Named
	for _, p := range params {
		named = append(named, checkpoint.Named{Name: nanoGPTName(p.Name), T: p.Value})
		if p.Name == "wte.weight" {
			named = append(named, checkpoint.Named{Name: "lm_head.weight", T: p.Value})
		}
	}
	return checkpoint.Save(path, named, map[string]string{"format": "pt", "source": "vkamp tools/gpt"})
}
