package tensor

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// TestFormsTable checks the forms table's rows for devices described by
// hand (a GPU with and without cooperative matrices, lavapipe, SwiftShader,
// a CPU driver without shaderInt64), and that a forced kind overrides only
// the matmul rule, checked against what the device can run.
func TestFormsTable(t *testing.T) {
	gpu := vk.Info{Name: "a GPU", Type: vk.TypeDiscrete, Driver: vk.DriverNVIDIA, ShaderInt64: true,
		SubgroupSize: 32, SubgroupInCompute: true, SubgroupOperations: []string{"shuffle", "quad"}}
	coop := gpu
	coop.CooperativeMatrixUsable = true
	lavapipe := vk.Info{Name: "llvmpipe", Type: vk.TypeCPU, Driver: vk.DriverLavapipe, ShaderInt64: true,
		SubgroupSize: 8, SubgroupInCompute: true, SubgroupOperations: []string{"shuffle", "quad"}}
	swiftShader := vk.Info{Name: "SwiftShader Device", Type: vk.TypeCPU, Driver: vk.DriverSwiftShader, ShaderInt64: true,
		SubgroupSize: 4, SubgroupInCompute: true, SubgroupOperations: []string{"shuffle", "quad"}}
	lavapipe26 := lavapipe
	lavapipe26.DriverVersion = 26<<22 | 1<<12 | 6 // Mesa 26.1.6
	noInt64 := lavapipe
	noInt64.Driver, noInt64.ShaderInt64 = vk.DriverUnknown, false
	for _, c := range []struct {
		name string
		info vk.Info
		want forms
	}{
		{"GPU", gpu, forms{optimVec4: true, matmul: mmShared, matmulSmall: mmRegister}},
		{"GPU with cooperative matrices", coop, forms{optimVec4: true, matmul: mmCoop, matmulSmall: mmRegister}},
		{"lavapipe", lavapipe, forms{texels: true, fewGroups: true, rowPerInvocation: true, loopLimit: lavapipeLoops,
			attnTex: true, optimVec4: true, matmul: mmTexel, matmulSmall: mmSubgroup}},
		{"lavapipe 26", lavapipe26, forms{texels: true, fewGroups: true, rowPerInvocation: true, loopLimit: lavapipeLoops,
			attnTex: true, optimVec4: true, matmul: mmSubgroup, matmulSmall: mmSubgroup}},
		{"SwiftShader", swiftShader, forms{fewGroups: true, rowPerInvocation: true, matmul: mmQuad, matmulSmall: mmSubgroup}},
		{"CPU driver without shaderInt64", noInt64, forms{fewGroups: true, rowPerInvocation: true, attnTex: true,
			optimVec4: true, matmul: mmSubgroup, matmulSmall: mmSubgroup}},
	} {
		if got := formsFor(c.info, ""); got != c.want {
			t.Errorf("%s: row %+v, want %+v", c.name, got, c.want)
		}
	}

	f := formsFor(lavapipe, "subgroup")
	if k, forced, err := f.matmulKind(lavapipe, ""); err != nil || k != mmSubgroup || forced {
		t.Errorf("lavapipe forced to subgroup: %v %v %v", k, forced, err)
	}
	if k, forced, err := f.matmulKind(lavapipe, "texel"); err != nil || k != mmTexel || !forced {
		t.Errorf("a call's kind over the device's: %v %v %v", k, forced, err)
	}
	if _, _, err := f.matmulKind(lavapipe, "coop"); err == nil || !strings.Contains(err.Error(), "cooperative") {
		t.Errorf("coop on lavapipe 22.3: %v, want an error naming what is missing", err)
	}
	ss := formsFor(swiftShader, "")
	if _, _, err := ss.matmulKind(swiftShader, "texel"); err == nil {
		t.Error("texel on SwiftShader: no error")
	}
	if _, _, err := f.matmulKind(lavapipe, "tiled"); err == nil || !strings.Contains(err.Error(), `"tiled"`) {
		t.Errorf("unknown kind: %v", err)
	}
}

// TestFormsOfDevice checks the row of the test device against the table's
// rule for its capabilities, and that it is made once.
func TestFormsOfDevice(t *testing.T) {
	d := devtest.Open(t)
	f := formsOf(d)
	want := formsFor(d.Info(), d.Matmul())
	if d.PlainForms() {
		want.plainOnly()
	}
	if *f != want {
		t.Errorf("%s: row %+v, want %+v", d.Info().Name, *f, want)
	}
	if formsOf(d) != f {
		t.Error("the row is made again")
	}
	t.Logf("%s (%s): %+v", d.Info().Name, d.Info().Driver, *f)
}

// TestFormsOnlyHere checks that no file of the package but forms.go asks
// what the device is: ops ask the forms table.
func TestFormsOnlyHere(t *testing.T) {
	probe := regexp.MustCompile(`TypeCPU|TypeDiscrete|TypeIntegrated|\.Driver\b|DriverName|SwiftShader|llvmpipe|os\.Getenv\("VKAMP_`)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		if file == "forms.go" || strings.HasSuffix(file, "_test.go") {
			continue
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			code, _, _ := strings.Cut(line, "//")
			if probe.MatchString(code) {
				t.Errorf("%s:%d asks about the device outside the forms table: %s", file, i+1, strings.TrimSpace(line))
			}
		}
	}
}

// TestPlainFormsOption opens a second device told to run the plain forms
// (vk.Options.PlainForms) and checks its row (no texel forms) and that a
// kernel of each kind with a texel form gives the bits it gives on the
// default device, which on lavapipe runs those forms: elementwise (with
// the fp16 decode of DRIVER_HALVES), the table lookup, rows, columns,
// softmax, layer norm, dropout, index select and a cast.
func TestPlainFormsOption(t *testing.T) {
	d := devtest.Open(t)
	p := devtest.Open(t, vk.Options{PlainForms: true})
	if f := formsOf(p); !f.plain || f.texels || f.attnTex || f.optimVec4 || f.matmul == mmTexel {
		t.Errorf("plain forms asked for: row %+v", *f)
	}
	rnd := func(seed uint64, n int) []float32 {
		r := rand.New(rand.NewPCG(seed, 1))
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	ops := func(d *vk.Device) map[string]*Tensor {
		x := FromFloat32(d, rnd(3, 64*48), 64, 48)
		y := FromFloat32(d, rnd(4, 64*48), 64, 48)
		h, hy := Cast(x, Float16), Cast(y, Float16)
		g, b := FromFloat32(d, rnd(5, 48), 48), FromFloat32(d, rnd(6, 48), 48)
		idx := FromInt32(d, []int32{3, 0, 63, 7}, 4)
		ln, _ := LayerNorm(x, g, b, 1e-5)
		return map[string]*Tensor{
			"Add f16": Add(h, hy, Float16), "Exp": Exp(x, Float32), "GELU f16": GELU(h, Float16),
			"SumAxis rows": SumAxis(x, 1), "SumAxisAs cols f16": SumAxisAs(h, 0, Float16),
			"Softmax": Softmax(x), "LayerNorm": ln,
			"Dropout f16": Dropout(h, 0.5, 7), "IndexSelect f16": IndexSelect(h, idx), "Cast f16": Cast(h, Float32),
		}
	}
	want, got := ops(d), ops(p)
	for name, w := range want {
		a, errA := w.Bytes()
		b, errB := got[name].Bytes()
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: plain forms differ from the device's forms (errors %v, %v)", name, errA, errB)
		}
	}
}

// TestPlainForms runs ReLU and its backward through kernels given no texel
// form (unaryPlain, binaryPlain: what a kernel written for GPUs gets) and
// checks the bits against the ops as they run, which on lavapipe take the
// texel forms: the plain form serves wherever no other is registered.
func TestPlainForms(t *testing.T) {
	d := devtest.Open(t)
	vals := []float32{-3, -0.5, 0, 0.25, 1.5, 65504, -65504, 1e-8}
	for _, dt := range []DType{Float32, Float16, BFloat16} {
		x := Cast(FromFloat32(d, vals, len(vals)), dt)
		dy := Cast(FromFloat32(d, []float32{1, 2, 3, 4, 5, 6, 7, 8}, len(vals)), dt)
		for name, pair := range map[string][2]*Tensor{
			"ReLU":         {unaryPlain("ReLU", kernels.Relu, x, 0, dt), ReLU(x, dt)},
			"ReLUBackward": {binaryPlain("ReLUBackward", kernels.ReluBackward, dy, x, 0, dt), ReLUBackward(dy, x, dt)},
		} {
			a, errA := pair[0].Bytes()
			b, errB := pair[1].Bytes()
			if errA != nil || errB != nil || !bytes.Equal(a, b) {
				t.Errorf("%s %v: plain form %v, op %v (%v, %v)", name, dt, a, b, errA, errB)
			}
		}
	}
}
