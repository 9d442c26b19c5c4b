package nn

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
)

// The engine checks every backward rule: a rule that returns the wrong number
// of gradients, or one of the wrong shape or dtype, panics naming the op.
// Each case swaps a bad rule into the table for the duration of the test.
func TestCheckGradsPanics(t *testing.T) {
	d := devtest.Open(t)
	cases := []struct {
		name string
		bad  rule
		want []string
	}{
		{"too few", func(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor { return nil },
			[]string{"scale", "0 gradients for 1 inputs"}},
		{"too many", func(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{tensor.Scale(dy, 2, dy.DType()), nil}
		}, []string{"scale", "2 gradients for 1 inputs"}},
		{"nil for a needed input", func(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{nil}
		}, []string{"scale", "no gradient for input 0"}},
		{"wrong shape", func(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{tensor.Zeros(g.dev, tensor.Float32, 4, 3)}
		}, []string{"scale backward", "[4 3]", "[3 4]"}},
		{"wrong dtype", func(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{tensor.Cast(dy, tensor.Float16)}
		}, []string{"scale backward", "float16", "float32"}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			good := rules[tensor.OpScale]
			rules[tensor.OpScale] = c.bad
			defer func() { rules[tensor.OpScale] = good }()

			p := NewParam(d, "p", make([]float32, 12), 3, 4)
			defer p.Close()
			g := NewGraph(d, Options{})
			defer g.Release()
			loss := g.Sum(g.Scale(g.Param(p), 3))
			msg := func() (msg string) {
				defer func() {
					r := recover()
					if err, ok := r.(error); ok {
						msg = err.Error()
					} else {
						t.Errorf("case %d: panic value %T %v, want an error", i, r, r)
					}
				}()
				g.Backward(loss, nil)
				return ""
			}()
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("case %d: panic %q does not mention %q", i, msg, w)
				}
			}
		})
	}
}

// Every op of the graph has a backward rule or is listed in noBackward,
// not both, and every rule belongs to an op: the table and the ops cannot
// drift apart silently.
func TestRulesTable(t *testing.T) {
	isOp := map[tensor.Op]bool{}
	for _, op := range tensor.Ops() {
		isOp[op] = true
		_, ok := rules[op]
		if noBackward[op] {
			require.False(t, ok, "%s has a backward rule and is in noBackward", op)
			continue
		}
		require.True(t, ok, "%s has no backward rule (add one, or list it in noBackward)", op)
	}
	for op := range rules {
		require.True(t, isOp[op], "a backward rule for %s, which is no op of tensor.Ops", op)
	}
	for op := range noBackward {
		require.True(t, isOp[op], "noBackward lists %s, which is no op of tensor.Ops", op)
	}
}

// TestDoubleRulesTable: every op with a backward rule has a differentiable
// one (doubleRules) or is declared without (noDoubleBackward), not both,
// so that an op added with only a first rule fails here rather than when
// Grad with createGraph reaches it.
func TestDoubleRulesTable(t *testing.T) {
	for op := range rules {
		_, ok := doubleRules[op]
		if noDoubleBackward[op] {
			require.False(t, ok, "%s has a double-backward rule and is in noDoubleBackward", op)
			continue
		}
		require.True(t, ok, "%s has a backward rule but no double-backward rule (add one, or list it in noDoubleBackward)", op)
	}
	for op := range doubleRules {
		_, ok := rules[op]
		require.True(t, ok, "a double-backward rule for %s, which has no backward rule", op)
	}
	for op := range noDoubleBackward {
		_, ok := rules[op]
		require.True(t, ok, "noDoubleBackward lists %s, which has no backward rule", op)
	}
}
