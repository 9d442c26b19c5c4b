package main

// A SPIR-V pass from SPV_NV_cooperative_matrix to SPV_KHR_cooperative_matrix.
//
// Debian 12's glslc compiles GL_NV_cooperative_matrix but not
// GL_KHR_cooperative_matrix, and its spirv-val knows only the NV extension.
// So cooperative-matrix kernels are written against the NV extension,
// compiled and validated as such, and rewritten here:
//
//	OpCapability CooperativeMatrixNV (5357)  -> CooperativeMatrixKHR (6022)
//	OpExtension "SPV_NV_cooperative_matrix"  -> "SPV_KHR_cooperative_matrix"
//	OpTypeCooperativeMatrixNV (5358) T S R C -> OpTypeCooperativeMatrixKHR (4456) T S R C Use
//	OpCooperativeMatrixLoadNV (5359) P Stride ColMajor [Mem]
//	                                         -> OpCooperativeMatrixLoadKHR (4457) P Layout Stride [Mem]
//	OpCooperativeMatrixStoreNV (5360) P O Stride ColMajor [Mem]
//	                                         -> OpCooperativeMatrixStoreKHR (4458) P O Layout Stride [Mem]
//	OpCooperativeMatrixMulAddNV (5361) A B C -> OpCooperativeMatrixMulAddKHR (4459) A B C
//	OpCooperativeMatrixLengthNV (5362) T     -> OpCooperativeMatrixLengthKHR (4460) T
//
// KHR matrix types carry their use (MatrixAKHR 0, MatrixBKHR 1,
// MatrixAccumulatorKHR 2), NV types do not: an NV fp16 type serves both
// operands of a MulAdd. The pass infers each value's use from the data flow:
// values joined by loads, stores, access chains, phis, selects, copies,
// composites and arithmetic form one class, and a class's use is fixed by
// where it meets a MulAdd (A, B, or C and the result). Every NV type, and
// every array and pointer type built on it, is then declared once per use
// that occurs, and each value is retyped to the declaration of its class.
// A class that meets two uses (one variable holding both A and B operands)
// is an error: the shader must keep them in distinct variables. Layouts come
// from the NV column-major flag, which must be a literal true or false.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Opcodes and enums of the pass and its checker.
const (
	opUndef            = 1
	opName             = 5
	opMemberName       = 6
	opExtension        = 10
	opExtInstImport    = 11
	opMemoryModel      = 14
	opCapability       = 17
	opTypeVoid         = 19
	opTypeFunction     = 33
	opConstantTrue     = 41
	opConstantFalse    = 42
	opConstantNull     = 46
	opSpecConstantTrue = 48
	opSpecConstFalse   = 49
	opSpecConstantOp   = 52
	opFunction         = 54
	opFunctionParam    = 55
	opFunctionCall     = 57
	opLoad             = 61
	opStore            = 62
	opAccessChain      = 65
	opInBoundsAccess   = 66
	opDecorateId       = 332
	opCompositeConstr  = 80
	opCompositeExtract = 81
	opCompositeInsert  = 82
	opCopyObject       = 83
	opMatrixTimesScal  = 143
	opSelect           = 169
	opPhi              = 245
	opDecorateString   = 5632
	opMemberDecString  = 5633

	opTypeCoopNV   = 5358
	opCoopLoadNV   = 5359
	opCoopStoreNV  = 5360
	opCoopMulAddNV = 5361
	opCoopLengthNV = 5362

	opTypeCoopKHR   = 4456
	opCoopLoadKHR   = 4457
	opCoopStoreKHR  = 4458
	opCoopMulAddKHR = 4459
	opCoopLengthKHR = 4460

	capCoopNV            = 5357
	capCoopKHR           = 6022
	capVulkanMemoryModel = 5345
	memoryModelVulkan    = 3

	extCoopNV  = "SPV_NV_cooperative_matrix"
	extCoopKHR = "SPV_KHR_cooperative_matrix"
)

// Cooperative matrix uses (KHR) and layouts.
const (
	useA   = 0
	useB   = 1
	useAcc = 2
	nUses  = 3

	layoutRowMajor    = 0
	layoutColumnMajor = 1
)

var useNames = [nUses]string{"A", "B", "accumulator"}

// Opcodes whose result is computed element-wise from operands of the same
// matrix use: arithmetic and conversions allowed on cooperative matrices.
var coopElementwise = map[uint32]bool{
	126: true, 127: true, 128: true, 129: true, 130: true, 131: true, 132: true, 133: true, // negate, add, sub, mul
	134: true, 135: true, 136: true, opMatrixTimesScal: true, // div, matrix times scalar
	109: true, 110: true, 111: true, 112: true, 113: true, 114: true, 115: true, 124: true, // conversions, bitcast
}

// spvInst is one instruction: its opcode and operand words (without the
// word-count/opcode word).
type spvInst struct {
	op uint32
	w  []uint32
}

func decodeSPV(b []byte) (hdr [5]uint32, insts []spvInst, err error) {
	if len(b)%4 != 0 || len(b) < 20 || binary.LittleEndian.Uint32(b) != 0x07230203 {
		return hdr, nil, errors.New("not a little-endian SPIR-V module")
	}
	words := make([]uint32, len(b)/4)
	for i := range words {
		words[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	copy(hdr[:], words)
	for i := 5; i < len(words); {
		n, op := int(words[i]>>16), words[i]&0xffff
		if n == 0 || i+n > len(words) {
			return hdr, nil, fmt.Errorf("bad instruction at word %d", i)
		}
		insts = append(insts, spvInst{op, append([]uint32(nil), words[i+1:i+n]...)})
		i += n
	}
	return hdr, insts, nil
}

func encodeSPV(hdr [5]uint32, insts []spvInst) []byte {
	n := 5
	for _, in := range insts {
		n += 1 + len(in.w)
	}
	b := make([]byte, 0, 4*n)
	for _, w := range hdr {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	for _, in := range insts {
		b = binary.LittleEndian.AppendUint32(b, uint32(1+len(in.w))<<16|in.op)
		for _, w := range in.w {
			b = binary.LittleEndian.AppendUint32(b, w)
		}
	}
	return b
}

// spvString decodes a literal string operand.
func spvString(w []uint32) string {
	var sb strings.Builder
	for _, x := range w {
		for i := 0; i < 4; i++ {
			c := byte(x >> (8 * i))
			if c == 0 {
				return sb.String()
			}
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

func spvWords(s string) []uint32 {
	b := append([]byte(s), 0)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	w := make([]uint32, len(b)/4)
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return w
}

// isTypeDecl reports whether op declares a type (its result id is w[0]).
func isTypeDecl(op uint32) bool {
	return op >= opTypeVoid && op <= 39 || op == opTypeCoopNV || op == opTypeCoopKHR || op == 322 /* OpTypePipeStorage */ ||
		op == 327 /* OpTypeNamedBarrier */ || op == 4472 /* OpTypeRayQueryKHR */ || op == 5341 /* OpTypeAccelerationStructureKHR */
}

// hasCoopNV reports whether a module declares the CooperativeMatrixNV capability.
func hasCoopNV(b []byte) bool {
	_, insts, err := decodeSPV(b)
	if err != nil {
		return false
	}
	for _, in := range insts {
		if in.op == opCapability && len(in.w) == 1 && in.w[0] == capCoopNV {
			return true
		}
	}
	return false
}

// unionFind joins value ids into classes with a fixed use.
type unionFind struct {
	parent map[uint32]uint32
	use    map[uint32]int // root -> use, when fixed
	why    map[uint32]string
}

func (u *unionFind) find(x uint32) uint32 {
	p, ok := u.parent[x]
	if !ok {
		u.parent[x] = x
		return x
	}
	if p == x {
		return x
	}
	r := u.find(p)
	u.parent[x] = r
	return r
}

func (u *unionFind) union(a, b uint32) error {
	ra, rb := u.find(a), u.find(b)
	if ra == rb {
		return nil
	}
	ua, oka := u.use[ra]
	ub, okb := u.use[rb]
	if oka && okb && ua != ub {
		return fmt.Errorf("%%%d is used as matrix %s (%s) and %%%d as matrix %s (%s), but they are one value or variable; keep them in distinct variables",
			a, useNames[ua], u.why[ra], b, useNames[ub], u.why[rb])
	}
	u.parent[rb] = ra
	if !oka && okb {
		u.use[ra], u.why[ra] = ub, u.why[rb]
	}
	delete(u.use, rb)
	return nil
}

func (u *unionFind) pin(x uint32, use int, why string) error {
	r := u.find(x)
	if old, ok := u.use[r]; ok && old != use {
		return fmt.Errorf("%%%d is used as matrix %s (%s) and as matrix %s (%s); keep them in distinct variables",
			x, useNames[old], u.why[r], useNames[use], why)
	}
	u.use[r], u.why[r] = use, why
	return nil
}

// coopToKHR rewrites a module using SPV_NV_cooperative_matrix to
// SPV_KHR_cooperative_matrix. Modules without it come back unchanged.
func coopToKHR(b []byte) ([]byte, error) {
	hdr, insts, err := decodeSPV(b)
	if err != nil {
		return nil, err
	}
	if !hasCoopNV(b) {
		return b, nil
	}
	bound := hdr[3]
	defs := map[uint32]spvInst{}  // type and constant declarations by id
	bearing := map[uint32]bool{}  // types that are or contain an NV matrix
	coopOf := map[uint32]uint32{} // bearing type -> its NV matrix type
	typeOf := map[uint32]uint32{} // value id -> its type, for bearing values
	var uintType uint32
	firstCoop := -1
	for i, in := range insts {
		switch {
		case isTypeDecl(in.op):
			id := in.w[0]
			defs[id] = in
			switch in.op {
			case opTypeCoopNV:
				bearing[id], coopOf[id] = true, id
				if firstCoop < 0 {
					firstCoop = i
				}
			case 28, 29: // OpTypeArray, OpTypeRuntimeArray
				if bearing[in.w[1]] {
					bearing[id], coopOf[id] = true, coopOf[in.w[1]]
				}
			case 32: // OpTypePointer
				if bearing[in.w[2]] {
					bearing[id], coopOf[id] = true, coopOf[in.w[2]]
				}
			case 30, opTypeFunction: // OpTypeStruct (members), OpTypeFunction (return, parameters)
				for _, m := range in.w[1:] {
					if bearing[m] {
						return nil, fmt.Errorf("type %%%d (opcode %d) contains a cooperative matrix: only arrays of them and pointers to them are supported", id, in.op)
					}
				}
			case 21: // OpTypeInt
				if in.w[1] == 32 && in.w[2] == 0 && uintType == 0 {
					uintType = id
				}
			}
		case in.op >= opConstantTrue && in.op <= 52: // constants and spec constants: result type, result id
			defs[in.w[1]] = in
		}
	}
	if firstCoop < 0 {
		return nil, errors.New("CooperativeMatrixNV capability without a cooperative matrix type")
	}
	if uintType == 0 {
		return nil, errors.New("no 32-bit unsigned integer type for the layout and use constants")
	}

	// Values: record the types of bearing values and join their classes.
	uf := &unionFind{parent: map[uint32]uint32{}, use: map[uint32]int{}, why: map[uint32]string{}}
	val := func(id uint32) bool { _, ok := typeOf[id]; return ok }
	join := func(ids ...uint32) error {
		var first uint32
		for _, id := range ids {
			if !val(id) {
				continue
			}
			if first == 0 {
				first = id
				uf.find(id)
			} else if err := uf.union(first, id); err != nil {
				return err
			}
		}
		return nil
	}
	for _, in := range insts {
		// Result type and id, for the instructions that can produce bearing values.
		if hasResultType(in.op) && len(in.w) >= 2 && bearing[in.w[0]] {
			typeOf[in.w[1]] = in.w[0]
		}
	}
	for _, in := range insts {
		w := in.w
		var err error
		switch in.op {
		case opVariable:
			if len(w) > 3 {
				err = join(w[1], w[3])
			} else if val(w[1]) {
				uf.find(w[1])
			}
		case opLoad, opCopyObject:
			err = join(w[1], w[2])
		case opStore:
			err = join(w[0], w[1])
		case opAccessChain, opInBoundsAccess, opCompositeExtract:
			err = join(w[1], w[2])
		case opCompositeInsert:
			err = join(w[1], w[2], w[3])
		case opSelect:
			err = join(w[1], w[3], w[4])
		case opPhi:
			ids := []uint32{w[1]}
			for i := 2; i+1 < len(w); i += 2 {
				ids = append(ids, w[i])
			}
			err = join(ids...)
		case opConstantComposite, opSpecConstantComposite, opCompositeConstr:
			err = join(w[1:]...) // arrays of matrices; a matrix's scalar constituent is no value here
		case opCoopMulAddNV:
			for i, id := range []uint32{w[2], w[3], w[4], w[1]} { // A, B, C, result
				if err = uf.pin(id, []int{useA, useB, useAcc, useAcc}[i], fmt.Sprintf("MulAdd %%%d", w[1])); err != nil {
					break
				}
			}
		case opCoopLoadNV, opCoopStoreNV, opCoopLengthNV, opUndef, opConstantNull, opName, opMemberName,
			opDecorate, opDecorateId, opDecorateString, opMemberDecorate, opMemberDecString:
			// Loads start classes; stores and lengths need no class; names and
			// decorations are handled when writing.
		case opSpecConstantOp:
			if len(w) > 2 && w[2] == opCoopLengthNV {
				break
			}
			err = foreign(spvInst{in.op, append([]uint32{w[0], w[1]}, w[3:]...)}, bearing, val) // w[2]: an opcode
		default:
			if coopElementwise[in.op] {
				err = join(w[1:]...)
			} else if !isTypeDecl(in.op) && !noCoop(in.op) {
				err = foreign(in, bearing, val)
			}
		}
		if err != nil {
			return nil, err
		}
	}

	// The use of every class: fixed by a MulAdd, else by the component type
	// (a class that never meets a MulAdd: fp32 accumulator, other A).
	useOf := func(id uint32) int {
		if u, ok := uf.use[uf.find(id)]; ok {
			return u
		}
		return defaultUse(defs, coopOf[typeOf[id]])
	}

	// Which variants of each bearing type are needed, closed downwards.
	need := map[uint32]*[nUses]bool{}
	var want func(t uint32, u int)
	want = func(t uint32, u int) {
		if !bearing[t] {
			return
		}
		if need[t] == nil {
			need[t] = new([nUses]bool)
		}
		if need[t][u] {
			return
		}
		need[t][u] = true
		d := defs[t]
		switch d.op {
		case 28, 29:
			want(d.w[1], u)
		case 32:
			want(d.w[2], u)
		}
	}
	ids := make([]uint32, 0, len(typeOf))
	for id := range typeOf {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		want(typeOf[id], useOf(id))
	}
	for t := range bearing { // unused types keep one declaration
		if need[t] == nil {
			want(t, defaultUse(defs, coopOf[t]))
		}
	}
	// Lengths name a type: it must have one variant.
	for _, in := range insts {
		var t uint32
		switch {
		case in.op == opCoopLengthNV:
			t = in.w[2]
		case in.op == opSpecConstantOp && len(in.w) > 3 && in.w[2] == opCoopLengthNV:
			t = in.w[3]
		default:
			continue
		}
		if n := countUses(need[t]); n != 1 {
			return nil, fmt.Errorf("OpCooperativeMatrixLengthNV of type %%%d, which is used in %d roles", t, n)
		}
	}

	// Ids: the first variant (in use order) keeps the type's id.
	variant := map[uint32]*[nUses]uint32{}
	tids := make([]uint32, 0, len(need))
	for t := range need {
		tids = append(tids, t)
	}
	sort.Slice(tids, func(i, j int) bool { return tids[i] < tids[j] })
	for _, t := range tids {
		v := new([nUses]uint32)
		first := true
		for u := 0; u < nUses; u++ {
			if !need[t][u] {
				continue
			}
			if first {
				v[u], first = t, false
			} else {
				v[u] = bound
				bound++
			}
		}
		variant[t] = v
	}
	only := func(t uint32) uint32 { // the one variant of a type
		for u := 0; u < nUses; u++ {
			if need[t][u] {
				return variant[t][u]
			}
		}
		return t
	}
	retype := func(t, value uint32) uint32 {
		if !bearing[t] {
			return t
		}
		return variant[t][useOf(value)]
	}
	var useConst [nUses]uint32
	for u := range useConst {
		useConst[u] = bound
		bound++
	}
	layoutConst := [2]uint32{useConst[0], useConst[1]} // RowMajorKHR 0, ColumnMajorKHR 1
	layout := func(flag uint32) (uint32, error) {
		switch defs[flag].op {
		case opConstantFalse:
			return layoutConst[layoutRowMajor], nil
		case opConstantTrue:
			return layoutConst[layoutColumnMajor], nil
		}
		return 0, fmt.Errorf("column-major flag %%%d is not a literal true or false", flag)
	}

	out := make([]spvInst, 0, len(insts)+16)
	for i, in := range insts {
		if i == firstCoop {
			for u, id := range useConst {
				out = append(out, spvInst{opConstant, []uint32{uintType, id, uint32(u)}})
			}
		}
		w := append([]uint32(nil), in.w...)
		switch {
		case in.op == opCapability && w[0] == capCoopNV:
			w[0] = capCoopKHR
		case in.op == opExtension && spvString(w) == extCoopNV:
			w = spvWords(extCoopKHR)
		case isTypeDecl(in.op) && bearing[w[0]]:
			for u := 0; u < nUses; u++ {
				if !need[w[0]][u] {
					continue
				}
				x := append([]uint32(nil), w...)
				x[0] = variant[w[0]][u]
				op := in.op
				switch in.op {
				case opTypeCoopNV:
					op = opTypeCoopKHR
					x = append(x, useConst[u])
				case 28, 29:
					x[1] = variant[w[1]][u]
				case 32:
					x[2] = variant[w[2]][u]
				}
				out = append(out, spvInst{op, x})
			}
			continue
		case (in.op == opDecorate || in.op == opDecorateId || in.op == opDecorateString) && bearing[w[0]]:
			for u := 0; u < nUses; u++ {
				if need[w[0]][u] {
					x := append([]uint32(nil), w...)
					x[0] = variant[w[0]][u]
					out = append(out, spvInst{in.op, x})
				}
			}
			continue
		case in.op == opCoopLoadNV: // RT R P Stride ColMajor [Mem] -> RT R P Layout Stride [Mem]
			l, err := layout(w[4])
			if err != nil {
				return nil, err
			}
			x := []uint32{retype(w[0], w[1]), w[1], w[2], l, w[3]}
			out = append(out, spvInst{opCoopLoadKHR, append(x, w[5:]...)})
			continue
		case in.op == opCoopStoreNV: // P O Stride ColMajor [Mem] -> P O Layout Stride [Mem]
			l, err := layout(w[3])
			if err != nil {
				return nil, err
			}
			x := []uint32{w[0], w[1], l, w[2]}
			out = append(out, spvInst{opCoopStoreKHR, append(x, w[4:]...)})
			continue
		case in.op == opCoopMulAddNV:
			out = append(out, spvInst{opCoopMulAddKHR, []uint32{retype(w[0], w[1]), w[1], w[2], w[3], w[4]}})
			continue
		case in.op == opCoopLengthNV:
			out = append(out, spvInst{opCoopLengthKHR, []uint32{w[0], w[1], only(w[2])}})
			continue
		case in.op == opSpecConstantOp && len(w) > 3 && w[2] == opCoopLengthNV:
			w[2], w[3] = opCoopLengthKHR, only(w[3])
		case hasResultType(in.op) && len(w) >= 2 && bearing[w[0]]:
			w[0] = retype(w[0], w[1])
		}
		out = append(out, spvInst{in.op, w})
	}
	hdr[3] = bound
	res := encodeSPV(hdr, out)
	if err := checkKHR(res); err != nil {
		return nil, fmt.Errorf("rewritten module: %v", err)
	}
	return res, nil
}

func countUses(n *[nUses]bool) int {
	c := 0
	if n != nil {
		for _, x := range n {
			if x {
				c++
			}
		}
	}
	return c
}

// noCoop reports whether an instruction never takes a cooperative matrix:
// module-level declarations, constants, control flow and barriers, many of
// which have literal operands that could look like ids.
func noCoop(op uint32) bool {
	switch op {
	case 3, 4, 7, 8, 317, 330, // OpSource, OpSourceExtension, OpString, OpLine, OpNoLine, OpModuleProcessed
		opExtension, opExtInstImport, opMemoryModel, opEntryPoint, opExecutionMode, opCapability, opExecutionModeId,
		248, 249, 250, 251, 246, 247, 253, 255, 56, 252, // OpLabel, OpBranch(Conditional), OpSwitch, merges, returns, OpFunctionEnd, OpKill
		224, 225, // OpControlBarrier, OpMemoryBarrier
		opConstantTrue, opConstantFalse, opConstant, 45, opSpecConstantTrue, opSpecConstFalse, opSpecConstant: // scalar constants
		return true
	}
	return false
}

// foreign fails if an instruction the pass does not know takes or makes a
// cooperative matrix (or a pointer to one): an operand that is such a value,
// or a first operand (the result type, for most instructions) that is such
// a type. A literal operand equal to such an id fails too; the error says
// which instruction to look at.
func foreign(in spvInst, bearing map[uint32]bool, val func(uint32) bool) error {
	for i, x := range in.w {
		if val(x) || i == 0 && bearing[x] {
			return fmt.Errorf("instruction with opcode %d uses cooperative matrix %%%d, which the NV-to-KHR pass does not support", in.op, x)
		}
	}
	return nil
}

// defaultUse is the use of an NV matrix type's values that never meet a
// MulAdd: accumulator for fp32 components, else A.
func defaultUse(defs map[uint32]spvInst, coop uint32) int {
	c := defs[defs[coop].w[1]]
	if c.op == 22 && c.w[1] == 32 { // OpTypeFloat 32
		return useAcc
	}
	return useA
}

// hasResultType reports whether an opcode's first two operands are a result
// type and a result id, for the opcodes that may produce cooperative
// matrices or pointers to them.
func hasResultType(op uint32) bool {
	switch op {
	case opUndef, opConstantComposite, opConstantNull, opSpecConstantComposite, opSpecConstantOp, opVariable, opLoad,
		opAccessChain, opInBoundsAccess, opCompositeConstr, opCompositeExtract, opCompositeInsert, opCopyObject,
		opSelect, opPhi, opFunctionParam, opFunctionCall, opFunction,
		opCoopLoadNV, opCoopMulAddNV, opCoopLengthNV, opCoopLoadKHR, opCoopMulAddKHR, opCoopLengthKHR:
		return true
	}
	return coopElementwise[op]
}
