//go:build cgo

package vk

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
)

// The VKAMP_* environment variables. Open checks every one that is set, and
// refuses a name not in this list: a misspelt variable would otherwise be
// ignored without a word. Open reads them all, here and in device.go, and
// nothing deeper does: VKAMP_MATMUL, VKAMP_TUNE and VKAMP_TUNE_DIR reach
// tensor as Device.Matmul and Device.Tuning, as Options' fields do.
var envVars = map[string]string{ // name: the values it accepts
	"VKAMP_DEVICE":             "a device index or part of a device's name",
	"VKAMP_TIER":               "packed, storage16 or fp16",
	"VKAMP_MATMUL":             "shared, register, subgroup, quad, texel, coop or coopmat2",
	"VKAMP_TUNE":               `"off" or empty`,
	"VKAMP_TUNE_DIR":           "a directory",
	"VKAMP_VALIDATION":         boolValues,
	"VKAMP_NO_SYNC_VALIDATION": boolValues,
	"VKAMP_DETERMINISTIC":      boolValues,
	"VKAMP_PLAIN_FORMS":        boolValues,
}

const boolValues = "1, 0, true, false, yes, no, on or off"

// matmulKinds are VKAMP_MATMUL's values, as tensor's mmKindFor takes them.
var matmulKinds = []string{"shared", "register", "subgroup", "quad", "texel", "coop", "coopmat2"}

// MatmulKinds returns VKAMP_MATMUL's values, the matmul paths a device may
// be told to take (the one list: tensor and tools/bench ask for it).
func MatmulKinds() []string { return slices.Clone(matmulKinds) }

func envError(name, value, format string, args ...any) error {
	return fmt.Errorf("%w: %s=%q: %s", ErrEnvironment, name, value, fmt.Sprintf(format, args...))
}

// checkEnv checks what can be checked of the VKAMP_* variables without a
// device: that each name is known and each value is one its variable takes.
// It returns every problem found, joined.
func checkEnv() error {
	var errs []error
	var names []string
	for _, kv := range os.Environ() {
		name, value, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(strings.ToUpper(name), "VKAMP_") {
			continue // vkamp_tier is caught as well: it would be ignored as surely
		}
		if _, ok := envVars[name]; !ok {
			names = append(names, name)
			continue
		}
		if value == "" {
			continue // empty is unset
		}
		switch name {
		case "VKAMP_TIER":
			if _, err := ParseTier(value); err != nil {
				errs = append(errs, envError(name, value, "want %s", envVars[name]))
			}
		case "VKAMP_MATMUL":
			if !slices.Contains(matmulKinds, value) {
				errs = append(errs, envError(name, value, "want %s", envVars[name]))
			}
		case "VKAMP_TUNE":
			if value != "off" {
				errs = append(errs, envError(name, value, "want %s", envVars[name]))
			}
		case "VKAMP_TUNE_DIR":
			if fi, err := os.Stat(value); err == nil && !fi.IsDir() {
				errs = append(errs, envError(name, value, "not a directory (tuned tiles are stored in the directory it names, made if missing)"))
			}
		case "VKAMP_VALIDATION", "VKAMP_NO_SYNC_VALIDATION", "VKAMP_DETERMINISTIC", "VKAMP_PLAIN_FORMS":
			if _, ok := parseBool(value); !ok {
				errs = append(errs, envError(name, value, "want %s", envVars[name]))
			}
		}
	}
	sort.Strings(names)
	for _, name := range names {
		hint := ""
		if near := nearestEnvVar(name); near != "" {
			hint = " (did you mean " + near + "?)"
		}
		errs = append(errs, fmt.Errorf("%w: %s=%q: unknown variable%s; vkamp reads %s",
			ErrEnvironment, name, os.Getenv(name), hint, strings.Join(knownEnvVars(), ", ")))
	}
	return errors.Join(errs...)
}

// checkMatmul checks that the open device can run the matmul kernel kind
// that opt (Options.Matmul), else VKAMP_MATMUL, forces.
func checkMatmul(info *Info, opt string) error {
	const name = "VKAMP_MATMUL"
	v := cmp.Or(opt, os.Getenv(name))
	err := info.CanMatmul(v)
	if err == nil {
		return nil
	}
	var ok []string
	for _, k := range matmulKinds {
		if info.CanMatmul(k) == nil {
			ok = append(ok, k)
		}
	}
	if opt != "" {
		return fmt.Errorf("vk: Options.Matmul %q: %w; on it, want %s", opt, err, orList(ok))
	}
	return envError(name, v, "%s; on it, want %s", err, orList(ok))
}

// CanMatmul returns nil if the device can run the matmul kernel kind (one of
// MatmulKinds, or "" for the rule), else an error saying what it lacks. The
// one list of what each kind needs: Open checks Options.Matmul and
// VKAMP_MATMUL with it, tensor a MatMulOpts.Kind.
func (info *Info) CanMatmul(kind string) error {
	if kind != "" && !slices.Contains(matmulKinds, kind) {
		return fmt.Errorf("unknown matmul kind %q: want one of %s", kind, orList(matmulKinds))
	}
	if why := matmulMissing(info, kind); why != "" {
		return errors.New(why)
	}
	return nil
}

// matmulMissing says what the device lacks to run the matmul kernel kind,
// or "" if nothing.
func matmulMissing(info *Info, kind string) string {
	s := info.SubgroupSize
	switch kind {
	case "coop":
		if !info.CooperativeMatrixUsable {
			return info.Name + " has no usable cooperative matrices (VK_KHR_cooperative_matrix with an fp16 x fp16 -> fp32 subgroup shape, at the fp16 tier)"
		}
	case "coopmat2":
		if c := info.CooperativeMatrix2; !info.CooperativeMatrixUsable || c == nil || !c.PerElementOperations || !c.FlexibleDimensions {
			return info.Name + " has no usable VK_NV_cooperative_matrix2 (flexible dimensions and per-element operations, with cooperative matrices at the fp16 tier)"
		}
	case "texel":
		if info.Driver == DriverSwiftShader {
			return "SwiftShader's shader compiler does not finish matmul_tex"
		}
		if !info.ShaderInt64 {
			return info.Name + " has no shaderInt64 (matmul_tex stores 64-bit words)"
		}
	case "subgroup":
		if !info.SubgroupInCompute || !slices.Contains(info.SubgroupOperations, "shuffle") || s < 2 || s > 64 || s&(s-1) != 0 {
			return info.Name + " has no subgroup shuffle in compute shaders"
		}
	case "quad":
		if !info.SubgroupInCompute || !slices.Contains(info.SubgroupOperations, "quad") || s < 4 || s > 64 || s&(s-1) != 0 {
			return info.Name + " has no subgroup quad operations in compute shaders (or its subgroups are not a multiple of 4 wide)"
		}
	}
	return ""
}

// orList writes "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

func knownEnvVars() []string {
	var names []string
	for name := range envVars {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// nearestEnvVar returns the known variable within two edits (insertions,
// deletions, substitutions or swaps of neighbours) of name, if any.
func nearestEnvVar(name string) string {
	best, bestD := "", 3
	for _, known := range knownEnvVars() {
		if d := editDistance(strings.ToUpper(name), known); d < bestD {
			best, bestD = known, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
