package tensor

import (
	"fmt"

	"github.com/vkamp/vkamp/vk"
)

// The forms table says which form of each kernel family runs on a device.
// It is made once, when an op first runs on the device, from the device's
// typed capabilities (vk.Info: its type, driver ID and features) and its
// options (Device.Matmul). Ops ask formsOf and nothing else about the
// device: this file is the only one in the package that knows drivers.
//
// A family's plain form (storage buffers, a workgroup per row) serves
// every device; the other forms are registered here for the devices they
// were measured on. A kernel written for GPUs needs no other form.

// forms is one device's row of the table.
type forms struct {
	// texels: the texel forms (texels.go, rows_tex.go, tables.go, the
	// optimizers' and the pools' 2x2 tiles) serve. lavapipe fetches texels
	// with SIMD gathers but loads storage buffers lane by lane, so there
	// they run several times faster; they store 64-bit words (shaderInt64).
	// Not on SwiftShader: its elementwise tests went from 14 s to over 10
	// minutes with them.
	texels bool
	// fewGroups: grid-stride kernels run on few workgroups, each looping
	// over many blocks (ewiseGrid, poolGeom.grid, tableChunk): CPU drivers
	// spend microseconds starting each workgroup.
	fewGroups bool
	// rowPerInvocation: one invocation owns each row up to rowOwnMax long in
	// the reductions and norms (segment, normLocal): a CPU driver's barrier
	// costs far more than a row's loop.
	rowPerInvocation bool
	// loopLimit is the most loop iterations one invocation may run, 0 for
	// none (loops.go).
	loopLimit int
	// attnTex: attention's texel kernels serve (attention_tex.go);
	// SwiftShader's compiler does not finish them, as with matmul_tex.
	attnTex bool
	// optimVec4: the optimizers' 4-wide texel forms serve, where texels do
	// (SwiftShader's compiler is slow on them).
	optimVec4 bool
	// matmul is the rule's matmul kernel where nothing forces one, and
	// matmulSmall the one for problems matmul_tex does not take.
	matmul, matmulSmall mmKind
	// forced is the kind Options.Matmul or VKAMP_MATMUL forces, "" for none.
	forced string
	// plain: Options.PlainForms asked for the plain forms (the texel ones
	// off), whatever the device.
	plain bool
}

// rowOwnMax is the longest row one invocation owns where rowPerInvocation.
const rowOwnMax = 4096

// lavapipeLoops is llvmpipe's limit (LP_MAX_TGSI_LOOP_ITERATIONS).
const lavapipeLoops = 65535

type formsKey struct{}

// formsOf returns d's row of the forms table, made on first use.
func formsOf(d *vk.Device) *forms {
	return d.Local(formsKey{}, func() any {
		f := formsFor(d.Info(), d.Matmul())
		if d.PlainForms() {
			f.plainOnly()
		}
		return &f
	}).(*forms)
}

// formsFor is the row for a device with these capabilities whose matmul
// kind is forced to matmul ("" for the rule).
func formsFor(info vk.Info, matmul string) forms {
	cpu := info.Type == vk.TypeCPU
	swiftShader := info.Driver == vk.DriverSwiftShader
	f := forms{
		texels:           cpu && !swiftShader && info.ShaderInt64,
		fewGroups:        cpu,
		rowPerInvocation: cpu,
		attnTex:          cpu && !swiftShader,
		optimVec4:        !swiftShader,
		forced:           matmul,
	}
	if info.Driver == vk.DriverLavapipe {
		f.loopLimit = lavapipeLoops
	}
	f.matmulSmall = mmRegister
	if cpu && mmHasShuffle(info) {
		f.matmulSmall = mmSubgroup
	}
	switch {
	case !cpu && info.CooperativeMatrixUsable:
		f.matmul = mmCoop
	case !cpu:
		f.matmul = mmShared
	case swiftShader && mmHasQuad(info):
		f.matmul = mmQuad
	case f.texels && info.Driver == vk.DriverLavapipe && mesaMajor(info) >= 26:
		// LLVM 19's lavapipe runs matmul_sg faster than matmul_tex
		// (tools/bench -run '^matmul-path/' -paths 1024, one run, 2
		// cores: fp16 65.3 vs 52.0 GFLOP/s, bf16 64.9 vs 59.9; Mesa
		// 22.3 in the same session: matmul_tex 53.9 vs 49.0 and 61.3 vs
		// 40.0). conv_tex keeps its texel plans (convTexPlan).
		f.matmul = f.matmulSmall
	case f.texels:
		f.matmul = mmTexel
	default:
		f.matmul = f.matmulSmall
	}
	return f
}

// plainOnly turns the texel forms off: the plain forms serve, and the
// matmul rule takes what it takes where texels do not serve.
func (f *forms) plainOnly() {
	f.plain, f.texels, f.attnTex, f.optimVec4 = true, false, false, false
	if f.matmul == mmTexel {
		f.matmul = f.matmulSmall
	}
}

// mesaMajor is the Mesa release of a Mesa driver, from its driverVersion
// (VK_MAKE_VERSION(major, minor, patch) since Mesa 23; lavapipe 22.3 says
// 1, read as 0).
func mesaMajor(info vk.Info) uint32 { return info.DriverVersion >> 22 }

// mmKinds maps each forced kind (vk.MatmulKinds) to its kernel.
var mmKinds = map[string]mmKind{
	"shared": mmShared, "register": mmRegister, "subgroup": mmSubgroup, "quad": mmQuad,
	"texel": mmTexel, "coop": mmCoop, "coopmat2": mmCoopCM2,
}

// matmulKind is the kind MatMul starts from on info's device for a call
// that asks for kind ("" for the device's): the forced one, else the rule.
// forced says a kind was asked for by name; matmul_tex then runs whatever
// the problem's size, and the cooperative kernels are tried first.
func (f *forms) matmulKind(info vk.Info, kind string) (k mmKind, forced bool, err error) {
	if kind == "" {
		kind = f.forced
	}
	if kind == "" {
		return f.matmul, false, nil
	}
	if err := info.CanMatmul(kind); err != nil {
		return 0, false, fmt.Errorf("matmul kind %q: %w", kind, err)
	}
	k = mmKinds[kind]
	return k, k == mmTexel || k == mmCoop || k == mmCoopCM2, nil
}
