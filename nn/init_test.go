package nn_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
)

func TestFansAndGain(t *testing.T) {
	for _, c := range []struct {
		shape       []int
		in, out     int
		errExpected bool
	}{
		{[]int{5}, 0, 0, true},
		{[]int{3, 4}, 4, 3, false},
		{[]int{8, 3, 5, 5}, 75, 200, false}, // conv [out, in, kh, kw]
	} {
		in, out, err := nn.Fans(c.shape)
		if (err != nil) != c.errExpected || in != c.in || out != c.out {
			t.Errorf("Fans(%v) = %d, %d, %v; want %d, %d", c.shape, in, out, err, c.in, c.out)
		}
	}
	for _, c := range []struct {
		name  string
		param float64
		want  float64
	}{
		{"linear", 0, 1}, {"conv2d", 0, 1}, {"sigmoid", 0, 1}, {"tanh", 0, 5.0 / 3}, {"relu", 0, math.Sqrt(2)},
		{"leaky_relu", 0.01, math.Sqrt(2 / (1 + 0.01*0.01))}, {"leaky_relu", math.Sqrt(5), math.Sqrt(2.0 / 6)}, {"selu", 0, 0.75},
	} {
		if g, err := nn.Gain(c.name, c.param); err != nil || g != c.want {
			t.Errorf("Gain(%s, %g) = %g, %v; want %g", c.name, c.param, g, err, c.want)
		}
	}
	if _, err := nn.Gain("swish", 0); err == nil {
		t.Error("Gain(swish): no error")
	}
}

// stats returns the mean, standard deviation, minimum and maximum of v.
func stats(v []float32) (mean, std, lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range v {
		mean += float64(x)
		lo, hi = math.Min(lo, float64(x)), math.Max(hi, float64(x))
	}
	mean /= float64(len(v))
	for _, x := range v {
		std += (float64(x) - mean) * (float64(x) - mean)
	}
	return mean, math.Sqrt(std / float64(len(v))), lo, hi
}

func TestInit(t *testing.T) {
	d := devtest.Open(t)
	const out, in = 64, 128 // 8192 draws: the sample std is within 3% of the true one
	fanIn, fanOut := float64(in), float64(out)
	for _, c := range []struct {
		name      string
		init      func(p *nn.Param, rng *rand.Rand) error
		mean, std float64
		bound     float64 // uniform: all in [-bound, bound); 0 for normal
	}{
		{"normal", func(p *nn.Param, r *rand.Rand) error { return nn.InitNormal(p, 0.5, 0.02, r) }, 0.5, 0.02, 0},
		{"uniform", func(p *nn.Param, r *rand.Rand) error { return nn.InitUniform(p, -0.3, 0.3, r) }, 0, 0.3 / math.Sqrt(3), 0.3},
		{"kaiming uniform", func(p *nn.Param, r *rand.Rand) error {
			return nn.InitKaimingUniform(p, math.Sqrt(5), nn.FanIn, "leaky_relu", r)
		}, 0, 1 / math.Sqrt(3*fanIn), 1 / math.Sqrt(fanIn)}, // nn.Linear's: bound 1/sqrt(in)
		{"kaiming normal fan out", func(p *nn.Param, r *rand.Rand) error {
			return nn.InitKaimingNormal(p, 0, nn.FanOut, "relu", r)
		}, 0, math.Sqrt(2 / fanOut), 0},
		{"xavier uniform", func(p *nn.Param, r *rand.Rand) error { return nn.InitXavierUniform(p, 2, r) },
			0, 2 * math.Sqrt(2/(fanIn+fanOut)), 2 * math.Sqrt(6/(fanIn+fanOut))},
		{"xavier normal", func(p *nn.Param, r *rand.Rand) error { return nn.InitXavierNormal(p, 1, r) },
			0, math.Sqrt(2 / (fanIn + fanOut)), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := tParam(t, d, "w", make([]float32, out*in), out, in)
			if err := c.init(p, rand.New(rand.NewPCG(1, 2))); err != nil {
				t.Fatal(err)
			}
			got := tRead(t, p.Value)
			mean, std, lo, hi := stats(got)
			if math.Abs(mean-c.mean) > 4*c.std/math.Sqrt(out*in) || math.Abs(std/c.std-1) > 0.03 {
				t.Errorf("mean %g, std %g; want %g, %g", mean, std, c.mean, c.std)
			}
			if c.bound != 0 && (lo < -c.bound || hi >= c.bound || hi < 0.99*c.bound) {
				t.Errorf("range [%g, %g]; want within [-%g, %g) and reaching near it", lo, hi, c.bound, c.bound)
			}
			// The same seed gives the same bits.
			q := tParam(t, d, "w2", make([]float32, out*in), out, in)
			if err := c.init(q, rand.New(rand.NewPCG(1, 2))); err != nil {
				t.Fatal(err)
			}
			tSameBits(t, "same seed", tRead(t, q.Value), got)
		})
	}
	t.Run("constants", func(t *testing.T) {
		p := tParam(t, d, "b", []float32{3, 4, 5}, 3)
		for _, c := range []struct {
			f    func() error
			want float32
		}{{func() error { return nn.InitZeros(p) }, 0}, {func() error { return nn.InitOnes(p) }, 1},
			{func() error { return nn.InitConstant(p, -2.5) }, -2.5}} {
			if err := c.f(); err != nil {
				t.Fatal(err)
			}
			tSameBits(t, fmt.Sprint(c.want), tRead(t, p.Value), []float32{c.want, c.want, c.want})
		}
	})
	t.Run("invalid", func(t *testing.T) {
		b := tParam(t, d, "b", []float32{3, 4, 5}, 3)
		rng := rand.New(rand.NewPCG(1, 2))
		for what, err := range map[string]error{
			"kaiming of 1-D":   nn.InitKaimingUniform(b, 0, nn.FanIn, "relu", rng),
			"xavier of 1-D":    nn.InitXavierNormal(b, 1, rng),
			"negative std":     nn.InitNormal(b, 0, -1, rng),
			"NaN mean":         nn.InitNormal(b, math.NaN(), 1, rng),
			"reversed uniform": nn.InitUniform(b, 1, 0, rng),
			"inf constant":     nn.InitConstant(b, math.Inf(1)),
		} {
			if err == nil {
				t.Errorf("%s: no error", what)
			}
		}
		tSameBits(t, "after refused inits", tRead(t, b.Value), []float32{3, 4, 5})
		tPanics(t, "nil rng", func() { nn.InitNormal(b, 0, 1, nil) })
	})
}
