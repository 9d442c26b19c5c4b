package vk

// A boolean specialization constant that specializes to false (det.glsl's
// DETERMINISTIC in the default mode) is made a plain OpConstantFalse before
// the pipeline is created. SwiftShader does not fold a branch on a
// specialization constant: it runs both sides of
// `DETERMINISTIC ? det_add(a, b) : a + b` under a lane mask, so every
// deterministic path cost its full price in the default mode (GELU 4-6x,
// attention 2x its folded time). On a plain constant its optimizer drops
// the dead side. The value is the one the pipeline would specialize to, so
// the results are the same bits (Mesa and GPU drivers fold such constants
// anyway). One that specializes to true stays as it is: frozen true,
// SwiftShader's optimizer takes the deterministic attention kernels whole
// and did not finish compiling attention_fwd in minutes.

// SPIR-V opcodes and the decoration this file reads.
const (
	spvOpDecorate           = 71
	spvOpConstantFalse      = 42
	spvOpSpecConstantTrue   = 48
	spvOpSpecConstantFalse  = 49
	spvDecorationSpecId     = 1
	spvHeaderWords          = 5
	spvSpecConstantBoolSize = 3 // words of OpSpecConstantTrue/False
)

// freezeBoolSpecs returns code with every boolean specialization constant
// whose specialized value is false (spec[id] == 0 where spec names the id,
// else its default) replaced by OpConstantFalse, and the SpecId decorations
// of those constants removed. code is not modified; a module it
// cannot walk (a zero or overlong instruction) comes back as it is.
func freezeBoolSpecs(code []uint32, spec map[uint32]uint32) []uint32 {
	if len(code) < spvHeaderWords {
		return code
	}
	// First pass: which result ids carry which SpecId, and which are
	// boolean specialization constants specialized to false.
	specID := map[uint32]uint32{}
	frozen := map[uint32]bool{} // false boolean specialization constants
	for i := spvHeaderWords; i < len(code); {
		n, op := int(code[i]>>16), code[i]&0xFFFF
		if n == 0 || i+n > len(code) {
			return code
		}
		switch {
		case op == spvOpDecorate && n == 4 && code[i+2] == spvDecorationSpecId:
			specID[code[i+1]] = code[i+3]
		case (op == spvOpSpecConstantTrue || op == spvOpSpecConstantFalse) && n == spvSpecConstantBoolSize:
			v := op == spvOpSpecConstantTrue
			if id, ok := specID[code[i+2]]; ok { // decorations precede the constants
				if x, ok := spec[id]; ok {
					v = x != 0
				}
			}
			if !v {
				frozen[code[i+2]] = true
			}
		}
		i += n
	}
	if len(frozen) == 0 {
		return code
	}
	out := make([]uint32, 0, len(code))
	out = append(out, code[:spvHeaderWords]...)
	for i := spvHeaderWords; i < len(code); {
		n, op := int(code[i]>>16), code[i]&0xFFFF
		ins := code[i : i+n]
		i += n
		switch {
		case op == spvOpDecorate && n == 4 && ins[2] == spvDecorationSpecId && frozen[ins[1]]:
			continue // the constant is no longer specializable
		case (op == spvOpSpecConstantTrue || op == spvOpSpecConstantFalse) && n == spvSpecConstantBoolSize && frozen[ins[2]]:
			out = append(out, uint32(n)<<16|spvOpConstantFalse, ins[1], ins[2])
			continue
		}
		out = append(out, ins...)
	}
	return out
}
