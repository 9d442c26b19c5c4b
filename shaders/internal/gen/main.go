// Command gen compiles the shaders/*.comp kernels to SPIR-V with glslc,
// validates them with spirv-val, reflects the binaries and writes kernels_gen.go and the typed launchers
// of tensor/internal/kernels (launch.go). It is run by
// `go generate ./shaders` and must produce byte-identical output for
// identical input, because CI regenerates and diffs.
//
// It deliberately does not import package shaders: that package embeds
// spv/*.spv and uses kernels_gen.go, which may be missing or stale here.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/vkamp/vkamp/vk"
)

// tierNames are the tiers' names (for `// tiers:` lines and TIER_ defines)
// and tierIdents their Go identifiers, by vk.Tier value.
var (
	tierNames  = []string{vk.TierPacked.String(), vk.TierStorage16.String(), vk.TierFP16.String()}
	tierIdents = []string{"vk.TierPacked", "vk.TierStorage16", "vk.TierFP16"}
)

// Access bits of vk.Access, as reflection finds them.
const (
	accRead   = uint8(vk.Read)
	accWrite  = uint8(vk.Write)
	accTexels = uint8(vk.Texels)
)

type variant struct {
	name   string // op name: the .comp base name
	src    string // path of the .comp, relative to the shaders dir
	tier   int
	tiered bool   // false: tier-agnostic, compiled without TIER defines
	noOpt  bool   // `// spirv-opt: off`: compiled with -O0
	env    string // the target environment: vulkan1.1, or a `// target:` line's
	texels bool   // the texel form of a `// texel form` kernel: name is the base name + "_tex"
}

// what names the kernel's source in messages and generated comments.
func (v variant) what() string {
	if v.texels {
		return v.src + "'s texel form"
	}
	return v.src
}

func (v variant) out() string { return "spv/" + v.name + "." + tierNames[v.tier] + ".spv" }

// kernel is what reflection finds in one binary.
type kernel struct {
	bindings []uint8
	push     int
	local    [3]uint32
	specX    bool
	names    names // from the unoptimized build
}

func main() {
	dir := flag.String("C", ".", "shaders directory")
	launch := flag.String("launch", launchFile, "the typed launchers' file, relative to the shaders directory")
	full := flag.Bool("full", false, "compile every kernel, whatever the build cache holds (CI)")
	cacheDir := flag.String("cache", defaultCacheDir(), "the build cache; empty for none")
	flag.Parse()
	if err := run(*dir, *launch, *cacheDir, *full); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// defaultCacheDir is the build cache's place in the user's cache directory.
func defaultCacheDir() string {
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "vkamp", "shader-gen")
}

func run(dir, launch, cacheDir string, full bool) error {
	for _, tool := range []string{"glslc", "spirv-val"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found in PATH: run through scripts/shader-toolchain (go generate ./shaders does)", tool)
		}
	}
	cache, err := newBuildCache(cacheDir, full)
	if err != nil {
		return err
	}
	comps, err := filepath.Glob(filepath.Join(dir, "*.comp"))
	if err != nil {
		return err
	}
	sort.Strings(comps)
	var vs []variant
	from := map[string]string{} // kernel name: the source that makes it
	for _, path := range comps {
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		kvs, err := variantsOf(filepath.Base(path), src)
		if err != nil {
			return err
		}
		for _, v := range kvs {
			if other, ok := from[v.name]; ok && other != v.what() {
				return fmt.Errorf("%s and %s both make the kernel %s", other, v.what(), v.name)
			}
			from[v.name] = v.what()
		}
		vs = append(vs, kvs...)
	}
	if err := os.MkdirAll(filepath.Join(dir, "spv"), 0o755); err != nil {
		return err
	}

	// Compile in parallel; results are indexed, so the output order is fixed.
	ks := make([]kernel, len(vs))
	errs := make([]error, len(vs))
	sem := make(chan struct{}, runtime.NumCPU())
	var wg sync.WaitGroup
	for i := range vs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			ks[i], errs[i] = build(dir, vs[i], cache)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}

	// Drop binaries of removed kernels or tiers so they are not embedded.
	want := map[string]bool{}
	for _, v := range vs {
		want[v.out()] = true
	}
	old, _ := filepath.Glob(filepath.Join(dir, "spv", "*.spv"))
	for _, p := range old {
		if !want["spv/"+filepath.Base(p)] {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	code, err := render(vs, ks)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "kernels_gen.go"), code, 0o644); err != nil {
		return err
	}
	return writeLaunchers(dir, launch, vs, ks)
}

var tiersRE = regexp.MustCompile(`^\s*//\s*tiers:(.*)$`)

// noOptRE marks a kernel that glslc must not optimize: spirv-opt (-O)
// drops NoContraction from the second and later inlined copies of a
// function and fuses their multiplies and adds into fma, which breaks the
// deterministic mode's `precise` arithmetic (det.glsl) in kernels that
// call a det_* function from several places. The drivers inline and
// optimize the kernel themselves. Such kernels are compiled with
// DET_FTZ_SELECT defined, the form of det_ftz SwiftShader compiles
// unoptimized SPIR-V of (see det.glsl).
var noOptRE = regexp.MustCompile(`(?m)^\s*//\s*spirv-opt:\s*off\b`)

// variantsOf returns the variants that the kernel source src, the file
// base, compiles to: one per tier, and as many again for its texel form.
func variantsOf(base string, src []byte) ([]variant, error) {
	name := strings.TrimSuffix(base, ".comp")
	if !nameRE.MatchString(name) { // dots would make spv names ambiguous
		return nil, fmt.Errorf("%s: kernel names may only use letters, digits, '_' and '-'", base)
	}
	tiers, tiered, err := parseTiers(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", base, err)
	}
	texel := texelRE.Match(src) // optional: without it the storage-buffer form serves every device
	var vs []variant
	for _, tx := range []bool{false, true} {
		if tx && !texel {
			break
		}
		v := variant{name: name, src: base, tiered: tiered, noOpt: noOptRE.Match(src), texels: tx, env: "vulkan1.1"}
		if m := targetRE.FindSubmatch(src); m != nil {
			v.env = string(m[1])
		}
		if tx {
			v.name += "_tex"
		}
		for _, t := range tiers {
			v.tier = t
			vs = append(vs, v)
		}
	}
	return vs, nil
}

// targetRE names a kernel's target environment where it needs more than
// Vulkan 1.1's SPIR-V 1.3: `// target: vulkan1.3` for SPIR-V 1.6
// (GL_NV_cooperative_matrix2). The device must then run Vulkan 1.3.
var targetRE = regexp.MustCompile(`(?m)^\s*//\s*target:\s*(vulkan1\.[123])\s*$`)

// texelRE marks a kernel that also has a texel form for CPU drivers
// (include/texels.glsl): the same source compiled with TEXELS defined, as
// the kernel <name>_tex. The elementwise bodies (unary.glsl, binary.glsl)
// hold both forms, so an op gets its CPU form from this one line.
var texelRE = regexp.MustCompile(`(?m)^\s*//\s*texel form\s*$`)

// parseTiers reads the `// tiers: ...` line from the first 40 lines. Without
// one the kernel is tier-agnostic: a single Packed variant, no tier define.
func parseTiers(src []byte) (tiers []int, tiered bool, err error) {
	lines := strings.SplitN(string(src), "\n", 41)
	if len(lines) > 40 {
		lines = lines[:40]
	}
	for _, l := range lines {
		m := tiersRE.FindStringSubmatch(strings.TrimRight(l, "\r"))
		if m == nil {
			continue
		}
		if tiered {
			return nil, false, errors.New("more than one `// tiers:` line")
		}
		tiered = true
		seen := map[int]bool{}
		for _, f := range strings.Fields(m[1]) {
			t := indexOf(tierNames, f)
			if t < 0 {
				return nil, false, fmt.Errorf("unknown tier %q (want %s)", f, strings.Join(tierNames, ", "))
			}
			if seen[t] {
				return nil, false, fmt.Errorf("tier %q listed twice", f)
			}
			seen[t] = true
		}
		if len(seen) == 0 {
			return nil, false, errors.New("empty `// tiers:` line")
		}
		for t := range tierNames { // in tier order, whatever the line's order
			if seen[t] {
				tiers = append(tiers, t)
			}
		}
	}
	if !tiered {
		tiers = []int{0}
	}
	return tiers, tiered, nil
}

func indexOf(s []string, x string) int {
	for i, y := range s {
		if y == x {
			return i
		}
	}
	return -1
}

// glslcArgs is shared with the test so both compile the same way.
func glslcArgs(v variant, out string) []string {
	if v.noOpt {
		return glslcArgsOpt(v, out, "-O0")
	}
	return glslcArgsOpt(v, out, "-O")
}

// glslcArgsOpt compiles with optimization level opt: -O ships, -O0 keeps
// the names the launchers are generated from.
func glslcArgsOpt(v variant, out, opt string) []string {
	env := v.env
	if env == "" {
		env = "vulkan1.1"
	}
	args := []string{"--target-env=" + env, opt, "-std=450", "-I", "include"}
	if v.tiered {
		args = append(args, "-DTIER_"+strings.ToUpper(tierNames[v.tier]), fmt.Sprintf("-DTIER=%d", v.tier))
	}
	if v.noOpt {
		args = append(args, "-DDET_FTZ_SELECT")
	}
	if v.texels {
		args = append(args, "-DTEXELS")
	}
	return append(args, "-o", out, v.src)
}

// build compiles and validates into a temporary name first, so a failure
// leaves the previous good binary (and nothing half-written) in spv/.
// Binaries whose inputs have not changed come from the cache.
func build(dir string, v variant, c *buildCache) (kernel, error) {
	fail := func(err error) (kernel, error) {
		return kernel{}, fmt.Errorf("%s [%s]: %v", v.what(), tierNames[v.tier], err)
	}
	key, err := c.key(dir, v)
	if err != nil {
		return fail(err)
	}
	b, nb, cached := c.get(key)
	if !cached {
		if b, err = compileSPV(dir, v, glslcArgs(v, v.out()+".tmp"), true); err != nil {
			return fail(err)
		}
		if nb, err = compileSPV(dir, v, glslcArgsOpt(v, v.out()+".names.tmp", "-O0"), false); err != nil {
			return fail(err)
		}
	}
	k, err := reflectSPV(b)
	if err == nil {
		k.names, err = reflectNames(nb)
	}
	if err == nil {
		err = k.names.checkAgainst(k, b)
	}
	if err != nil {
		return fail(err)
	}
	if !cached {
		c.put(key, b, nb)
	}
	tmp := filepath.Join(dir, v.out()+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return kernel{}, err
	}
	return k, os.Rename(tmp, filepath.Join(dir, v.out()))
}

// compileSPV runs glslc with args (whose output is args' last -o) and, if
// validate, spirv-val on the result, and returns the binary.
func compileSPV(dir string, v variant, args []string, validate bool) ([]byte, error) {
	out := args[indexOf(args, "-o")+1]
	defer os.Remove(filepath.Join(dir, out))
	if err := tool(dir, "glslc", args...); err != nil {
		return nil, err
	}
	if validate {
		if err := tool(dir, "spirv-val", "--target-env", args[0][len("--target-env="):], out); err != nil {
			return nil, err
		}
	}
	return os.ReadFile(filepath.Join(dir, out))
}

func tool(dir, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return fmt.Errorf("%s failed: %v\n%s", name, err, strings.TrimSpace(out.String()))
	}
	if out.Len() > 0 { // warnings: show them, but they do not fail the build
		fmt.Fprintf(os.Stderr, "%s\n", strings.TrimSpace(out.String()))
	}
	return nil
}

func render(vs []variant, ks []kernel) ([]byte, error) {
	idx := make([]int, len(vs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		va, vb := vs[idx[a]], vs[idx[b]]
		if va.name != vb.name {
			return va.name < vb.name
		}
		return va.tier < vb.tier
	})
	accName := map[uint8]string{accRead: "vk.Read", accWrite: "vk.Write", accRead | accWrite: "vk.ReadWrite", accRead | accTexels: "vk.Read | vk.Texels"}
	var b bytes.Buffer
	b.WriteString("// Code generated by shaders/internal/gen; DO NOT EDIT.\n\npackage shaders\n\nimport \"github.com/vkamp/vkamp/vk\"\n\nvar table = []Kernel{\n")
	for _, i := range idx {
		v, k := vs[i], ks[i]
		fmt.Fprintf(&b, "{Name: %q, Tier: %s, File: %q", v.name, tierIdents[v.tier], v.out())
		if len(k.bindings) > 0 {
			names := make([]string, len(k.bindings))
			for j, a := range k.bindings {
				names[j] = accName[a]
			}
			fmt.Fprintf(&b, ", Bindings: []vk.Access{%s}", strings.Join(names, ", "))
		}
		fmt.Fprintf(&b, ", PushSize: %d, LocalSize: [3]uint32{%d, %d, %d}", k.push, k.local[0], k.local[1], k.local[2])
		if k.specX {
			b.WriteString(", SpecLocalSizeX: true")
		}
		b.WriteString("},\n")
	}
	b.WriteString("}\n")
	return format.Source(b.Bytes())
}
