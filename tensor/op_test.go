package tensor_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/tensor"
)

// Every op has a name of its own, in PyTorch's snake case: errors print it,
// and two ops printing alike would be told apart by nobody.
func TestOpNames(t *testing.T) {
	ops := tensor.Ops()
	require.NotEmpty(t, ops)
	seen := map[string]tensor.Op{}
	for _, op := range ops {
		name := op.String()
		require.NotEmpty(t, name, "op %d has no name", uint16(op))
		require.NotContains(t, name, "Op(", "op %d has no name", uint16(op))
		require.Equal(t, strings.ToLower(name), name, "op %d", uint16(op))
		require.NotContains(t, name, " ", "op %d", uint16(op))
		prev, dup := seen[name]
		require.False(t, dup, "ops %d and %d are both %q", uint16(prev), uint16(op), name)
		seen[name] = op
	}
	require.Equal(t, "matmul", tensor.OpMatMul.String())
	require.Equal(t, "layer_norm", tensor.OpLayerNorm.String())
	require.Equal(t, "Op(0)", tensor.Op(0).String(), "the zero Op is no op")
	require.Equal(t, "Op(65535)", tensor.Op(65535).String())
}

// Ops lists each op once, in order, from the first; the zero Op is not in
// it.
func TestOpsList(t *testing.T) {
	ops := tensor.Ops()
	require.Equal(t, tensor.OpCast, ops[0])
	for i, op := range ops {
		require.Equal(t, tensor.Op(i+1), op)
	}
}
