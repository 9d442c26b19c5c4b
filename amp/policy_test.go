package amp

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/tensor"
)

// Every op of the graph has an explicit policy, Keep included: an op added
// to tensor without a decision here fails, rather than keep its input's
// dtype by default. And every entry is an op.
func TestPolicyTableCoversOps(t *testing.T) {
	ops := tensor.Ops()
	for _, op := range ops {
		_, ok := policies[op]
		require.True(t, ok, "op %s has no autocast policy (add one, Keep if it is on no list)", op)
	}
	require.Len(t, policies, len(ops), "an entry of the policy table is not an op of tensor.Ops")
}
