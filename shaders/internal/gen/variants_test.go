package main

import (
	"slices"
	"strings"
	"testing"
)

// TestTexelFormVariants checks the `// texel form` line: a second kernel,
// <name>_tex, per tier, compiled with TEXELS defined; an elementwise
// kernel without it (one written for GPUs) has its plain form alone.
func TestTexelFormVariants(t *testing.T) {
	src := "#version 450\n// tiers: packed fp16\n// texel form\n#define OP(a) (a)\n#include \"unary.glsl\"\n"
	vs, err := variantsOf("k.comp", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range vs {
		got = append(got, v.out())
		hasDefine := slices.Contains(glslcArgs(v, "out.spv"), "-DTEXELS")
		if hasDefine != v.texels {
			t.Errorf("%s: -DTEXELS given %v, texel form %v", v.out(), hasDefine, v.texels)
		}
	}
	want := []string{"spv/k.packed.spv", "spv/k.fp16.spv", "spv/k_tex.packed.spv", "spv/k_tex.fp16.spv"}
	if !slices.Equal(got, want) {
		t.Errorf("variants %v, want %v", got, want)
	}
	if vs[2].what() != "k.comp's texel form" {
		t.Errorf("texel form named %q", vs[2].what())
	}

	plain := strings.Replace(src, "// texel form\n", "", 1)
	if vs, err := variantsOf("k.comp", []byte(plain)); err != nil || len(vs) != 2 || vs[0].texels || vs[1].texels {
		t.Errorf("an elementwise kernel without a texel form: %d variants, error %v; want its 2 plain ones", len(vs), err)
	}
	own := strings.Replace(plain, "#define OP", "#define TEXELS\n#define OP", 1)
	if vs, err := variantsOf("k_tex.comp", []byte(own)); err != nil || len(vs) != 2 {
		t.Errorf("a kernel that is a texel form itself: %d variants, error %v", len(vs), err)
	}
}

// TestTexelPairs checks the generated pairing: a texel form with its
// kernel's interface (binding names in another case allowed) is launched
// with the kernel's types and paired with it in a Forms value; one with
// other bindings keeps types of its own and no pairing.
func TestTexelPairs(t *testing.T) {
	spec := []specConst{{id: 0, name: "LocalSizeX", kind: "uint", def: 64}, {id: 1, name: "IN0_DT", kind: "uint"}}
	push := []member{{name: "n", kind: "uint", off: 0}}
	k := func(name string, binds ...string) *iface {
		acc := make([][]uint8, len(binds))
		for i := range acc {
			acc[i] = []uint8{1}
		}
		return &iface{name: name, what: name + ".comp", spec: spec, push: push, pname: "EwisePush", binds: binds, acc: acc}
	}
	code, err := renderLaunchers([]*iface{k("k", "A", "D"), k("k_tex", "a", "D"), k("m", "A", "D"), k("m_tex", "A", "D", "a_tex")},
		[][3]string{{"F32", "0", "fp32"}})
	if err != nil {
		t.Fatal(err)
	}
	src := string(code)
	for _, want := range []string{
		"var KForms = Forms[KSpec, EwisePush, KBind]{Plain: K, Texel: KTex}",
		"func KTex(d *vk.Device, groups [3]uint32, s KSpec, p EwisePush, b KBind) error",
		"func MTex(d *vk.Device, groups [3]uint32, s MTexSpec, p EwisePush, b MTexBind) error",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("no %q in\n%s", want, src)
		}
	}
	for _, not := range []string{"KTexSpec", "KTexBind", "MForms"} {
		if strings.Contains(src, not) {
			t.Errorf("%s generated", not)
		}
	}
}
