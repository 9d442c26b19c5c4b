package tensor_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// detOpHashes pins the SHA-256 of each covered op's outputs on
// detOpOutputs' fixed inputs in deterministic mode, NaNs made one pattern
// (their payloads are not part of the promise). Pinned on lavapipe; the
// same on SwiftShader and at the packed and storage16 tiers.
var detOpHashes = map[string]string{
	"Adadelta":                "6720d29f107fd880faa7bc9cae34604e23049bc2e614503ea22db1c311f7c167",
	"AdamW":                   "ca7e3bbcd476b28565eec3f80a1c65f961a1d988988c71ceb63f287d6ddf4551",
	"Arange":                  "2677d362d2c236a7922864c84cc96f4467728656fad4efc12e159b3257eb3b2d",
	"Arange/bf16":             "63917f778fd20a2a3c15afc5039cd3606e4b7dee5a79652bb628d0ffed08881d",
	"ArgMax":                  "49e6d57aa6ebf445985e148debbe7ecc604860defa64cd31fbc1b390c2790094",
	"ArgMin":                  "a25e3e538d05d58efb901df35c6a6fc48e34eebbe08f34caa56be76340f4bf5a",
	"BatchNorm":               "dbbb2790750837edff0a5ba04f3153382bdeb970ac3a6ba88a278746a069ab23",
	"BatchNorm/eval":          "3b9c9de7bd0b4ee22d573d0e20419b09f56c81d127f998461a41c0d54c317793",
	"BatchNorm/running":       "5615edf169e2f035a3bd1f8a75b68c83e46035f8fdad47cc4196b5b02ae729f8",
	"BatchNormBackward":       "5b8deda382aed193ea07e28d936eb19c91fd6537f6e474f865315451dae75d0f",
	"BatchNormBackward/eval":  "3c57e9534cb425559e9f2f232f3aa3b22d66d6f4d845852c6da3f8f2bea61fa4",
	"ClipNorm":                "f64905fc128d6722aeced4e6d747901027d0d0ef705999306b9b8ebe7e236fc3",
	"CumSum":                  "af099dd9487d150d235f4fce81ad8e76da28d39927050984485f24d6ccb6c147",
	"CumSum/f16":              "cd0d6e9d724a38a83c36dc1f4d610b2aa1644bb8c85ebdacc0eb33ef1c1ff84d",
	"CumSum/long":             "243f7f6b0d48bee0707eec47d117180023ed3f0463ddd02f496eedc6a5dde8c7",
	"CumSumReverse/long":      "586e60eaeff2c56d8b1850a852f70631f5b185421a000b83521a3a10ec6090f8",
	"Div":                     "144d790165fad7bfc6d4db248589d486efe09865e27896272a00c633da4cc81a",
	"Div/broadcast":           "0778e3248d44240200d0a78717843ffc3e21675bcc192170d613f5757cbfe0b2",
	"EmbeddingBackward":       "2ea483a3cedb5bd7d673266848a302cdc33453581cf01ba015c8132adba89587",
	"Exp":                     "370317cdd5a489cc722a350c244f7e8713de5804e09151b268c28a081f0169ed",
	"Exp/f16":                 "b931a3dc060f1d4e776f6f1ff70c52e3272cf08adaf89677d16d3a7cb63d857a",
	"GELU":                    "46b0778d58f0ffdd78f19c9ca2e87f24ea2d0a06b8091213dc4f66c396f3f2a6",
	"GELU/f16":                "604eaced8af7f8cd3d38ab495fe99f6ee0133468cac576fa56ea8e4f62d3ebc1",
	"GELUBackward":            "4af91412bf3ead677f14827ace2a90b9517eba694383e5f9f9141f56a1fb69e3",
	"GELUTanh":                "9e52d3b7b9fab13aeb4a23c97c5cf82584e0f8b50911fd18b438d713faff899d",
	"GELUTanhBackward":        "a74bfc3b05498cac5d6c6a16142b4cc055102bf3f3307fcf5162d793977683d8",
	"LayerNorm/3":             "a699b3dccbb963516a6338ac4982bd79c8e964866ac56b9e74419b190f110c2f",
	"LayerNorm/300":           "59db307021c9393c2923842833e85a6e7d4e1c3e198638f175203d7310232645",
	"LayerNorm/5000":          "014b2381121e3d2bba80070a85be0a8922b4d5cb559161ad28d78ec3cc24887c",
	"LayerNormBackward/3":     "6097fec4aa28294c67544aa6d75dbf0660a23b54e316c4aea96dd4cfc5dc77da",
	"LayerNormBackward/300":   "02c8b7f5a47beee5d5bf925693daa2baa120c1cab15bd401047812e0178dd1ec",
	"LayerNormBackward/5000":  "3410acae93269fd132a727e69548d0e7107648bf75e91e97ab435dc9c816a0f5",
	"Log":                     "9bd5d6946cb0f0cadfab193e6e82056fcd267a4ad40adb9ed65561595b5e3b42",
	"LogSoftmaxBackward/3":    "e6302a7b426c3f8ac43292319722d56f7dcffd3723bc5e38f4497aefb6c1e316",
	"LogSoftmaxBackward/300":  "dbd43c88c93513693cdd2b5456885b87c2b42df775ec479db376a7cc222f0b84",
	"LogSoftmaxBackward/5000": "ac68937ebb799a6295df10f74ad368ed5ee30755da12575961d4849f0cf55d46",
	"NLLBackward":             "c3d643eaef5f5391e90075c3cb74ab1e146c6e727df8351fa37120277f647224",
	"OneHot":                  "5bee69cdf5aea600d48e477f1570fecefdea786262778ad9133db3e07e37cec4",
	"Pow/-0.5":                "039c5205a422788009845f67bdd0ce0a28263421d03aa47e192d4b9bc62ef730",
	"Pow/-1":                  "32a98342a2cad0224c961d85671198189a435b52b93ca2ba56e4d622aee57e8b",
	"Pow/-1.5":                "18fa63a9bdfa833138f0000fc17d3b0ebc2f4cd34ca2784dc5f572ffd0475620",
	"Pow/-2":                  "45bd166e9a80e3a66ea5b186fe52fe87f53de73f4ab4fd345809cc940107e61a",
	"Pow/0.33333334":          "a42348d45647a34e2f3278435825e88be5b00db3596e69e36952066f6900c349",
	"Pow/0.5":                 "03d0b72f25d923f44844122e44ddbbca118480ce4c1daf8036c9b0bf0dbdf7c2",
	"Pow/2":                   "49d81851d67ab3ad083b845ac1ad8bdaded11f5f937c97f59df50f8383d3972c",
	"Pow/2.5":                 "f5aa2247bdfea36a16d1ac31fb14733590cc11f85c8c76a03760bf8308a6547a",
	"Pow/3":                   "caab85be4d70acfd9605e909a32dcde41e3a00e48f3f793975d7348f243f7cfb",
	"Pow/7":                   "0e0aebef5da94edfd1b99ea91faf5b264aeaac9fead5a0f799f9da0a272d9d48",
	"Rsqrt":                   "933e419a5214f4c5185304dff10b5fd95fd0ba05c8d58fc3d6ed57b307af3a06",
	"SGD":                     "673369d0a322ce871a26b9611f846682c722eab54e9aab3e141cc7e8043af3ee",
	"Sigmoid":                 "e3f5a2ecacf763587a87a2e6342705a3172ed79420d70a61baa341074c2f008c",
	"Mish":                    "f0f89eba947ba83eb528ab27b0e0f82e1f89998a81e015b31099933c039576c2",
	"Multinomial":             "12108708cccb7e155bb812cd519d30a965741937a1444b28d029d0bc9326e041",
	"Mish/f16":                "2ad7284eb5d2af60e5de42fbd46ccf05d434b4d33ec25154a51e4a20b0611bb9",
	"MishBackward":            "510444818e197b9ff3cfcaf5fca0cc5b9121de235395eb62ab125085c9e7b2c0",
	"SiLU":                    "404882a275562bad32ca32d383ab069de92241059e2ae682a7169fa7fa228adf",
	"SiLU/f16":                "bf620f505b38ef507fe5b9e664c0d8122d2349fdc1a420f952eaa1db2f399044",
	"SiLUBackward":            "ec3e24907b043dbb6979497b801d1fc65055ef4c14d4b099a6a187dad8d7508d",
	"SoftmaxBackward/3":       "f148a01b2c82108bffda6725d74e4bb7b66ad181debcbc189b9fc813c6df8a89",
	"SoftmaxBackward/300":     "8750a5098bdfdc5cf700581e70a14424b9e9a6174d72059987e5c77b0c687b66",
	"SoftmaxBackward/5000":    "38fbc512cc7465178f6f7c3bcf8e520eb3d72b53731c5bf3a2e324a08e83df99",
	"Sort":                    "f06381485596ab5782737d3b305fd1b67579805d910d0b5e9e508108bf14d547",
	"Sqrt":                    "f85970a19796f05babd8da3ede72314c2405113333be59ff57b572fb385f4baf",
	"Tanh":                    "09c704c42db729c089434453496a14de61449ca1adf0cf29fe9df8e80c98e4b9",
	"TopK":                    "97e6464918520cb1755631ba900f2a9c0c9cb20fbbb3217261bd3c36ff0a6443",
}

// TestDeterministicOps runs each op the deterministic mode covers beyond
// the MLP's on fixed inputs and checks its outputs' hash against the pinned
// one: the same bits on every driver and tier.
func TestDeterministicOps(t *testing.T) {
	d := devtest.Open(t, vk.Options{Deterministic: true})
	outs := detOpOutputs(t, d)
	checkPinnedHashes(t, outs, detOpHashes)
}

// checkPinnedHashes checks each output's hash against its pinned one, and
// that every pinned output was computed.
func checkPinnedHashes(t *testing.T, outs map[string][]byte, pinned map[string]string) {
	t.Helper()
	names := make([]string, 0, len(outs))
	for name := range outs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		h := detHash(outs[name])
		want, ok := pinned[name]
		switch {
		case !ok:
			t.Errorf("%s: no pinned hash (got %q)", name, h)
		case h != want:
			t.Errorf("%s: hash %s, pinned %s", name, h, want)
		}
	}
	for name := range pinned {
		if _, ok := outs[name]; !ok {
			t.Errorf("%s: pinned but not computed", name)
		}
	}
}

// detHash is the hex SHA-256 of the float32 words in b, every NaN made
// 0x7FC00000.
func detHash(b []byte) string {
	c := slices.Clone(b)
	for i := 0; i+4 <= len(c); i += 4 {
		if u := binary.LittleEndian.Uint32(c[i:]); u&0x7F800000 == 0x7F800000 && u&0x7FFFFF != 0 {
			binary.LittleEndian.PutUint32(c[i:], 0x7FC00000)
		}
	}
	s := sha256.Sum256(c)
	return hex.EncodeToString(s[:])
}

// detVals returns n floats uniform in [-r, r) (in [0, r) if !signed), from
// seed, then the specials.
func detVals(seed uint64, n int, r float64, signed bool) []float32 {
	rng := rand.New(rand.NewPCG(seed, 11))
	v := make([]float32, n)
	for i := range v {
		x := rng.Float64() * r
		if signed {
			x = 2*x - r
		}
		v[i] = float32(x)
	}
	inf := float32(math.Inf(1))
	return append(v, 0, float32(math.Copysign(0, -1)), inf, -inf, float32(math.NaN()), 1, -1)
}

// detWide returns n positive floats with exponents in [-lo, hi), from seed.
func detWide(seed uint64, n, lo, hi int) []float32 {
	rng := rand.New(rand.NewPCG(seed, 12))
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(1+rng.Float64()) * float32(math.Ldexp(1, rng.IntN(hi+lo)-lo))
	}
	return v
}

// detOpOutputs computes each covered op on fixed inputs on d and returns
// its outputs' bytes by name.
func detOpOutputs(t *testing.T, d *vk.Device) map[string][]byte {
	t.Helper()
	outs := map[string][]byte{}
	var keep []*tensor.Tensor
	t.Cleanup(func() {
		for _, x := range keep {
			x.Release()
		}
	})
	up := func(v []float32, shape ...int) *tensor.Tensor {
		if len(shape) == 0 {
			shape = []int{len(v)}
		}
		x := tensor.FromFloat32(d, v, shape...)
		keep = append(keep, x)
		return x
	}
	// read records the bytes of xs under name; get also owns xs.
	read := func(name string, xs ...*tensor.Tensor) {
		t.Helper()
		var b []byte
		for _, x := range xs {
			xb, err := x.Bytes()
			require.NoError(t, err, name)
			b = append(b, xb...)
		}
		outs[name] = b
	}
	get := func(name string, xs ...*tensor.Tensor) {
		t.Helper()
		keep = append(keep, xs...)
		read(name, xs...)
	}
	const n = 3000
	f32, f16 := tensor.Float32, tensor.Float16

	// Elementwise functions.
	sym := up(detVals(1, n, 12, true))
	wide := up(append(detVals(2, n, 100, true), detWide(3, n, 126, 127)...))
	pos := up(append(detWide(4, n, 126, 127), detVals(5, n, 4, false)...))
	get("Exp", tensor.Exp(wide, f32))
	get("Exp/f16", tensor.Exp(sym, f16))
	get("Log", tensor.Log(pos, f32))
	get("Sqrt", tensor.Sqrt(pos, f32))
	get("Rsqrt", tensor.Rsqrt(pos, f32))
	get("Tanh", tensor.Tanh(sym, f32))
	get("Sigmoid", tensor.Sigmoid(wide, f32))
	get("SiLU", tensor.SiLU(wide, f32))
	get("SiLU/f16", tensor.SiLU(sym, f16))
	get("Mish", tensor.Mish(wide, f32))
	get("Mish/f16", tensor.Mish(sym, f16))
	get("GELU", tensor.GELU(sym, f32))
	get("GELU/f16", tensor.GELU(sym, f16))
	get("GELUTanh", tensor.GELUTanh(sym, f32))
	dy := up(detVals(6, n, 2, true))
	get("GELUBackward", tensor.GELUBackward(dy, sym, f32))
	get("GELUTanhBackward", tensor.GELUTanhBackward(dy, sym, f32))
	get("SiLUBackward", tensor.SiLUBackward(dy, sym, f32))
	get("MishBackward", tensor.MishBackward(dy, sym, f32))
	mixed := up(detVals(7, n, 3, true))
	for _, p := range []float32{2, 3, -1, -2, 0.5, -0.5, 2.5, -1.5, 1.0 / 3, 7} {
		get("Pow/"+strconv.FormatFloat(float64(p), 'g', -1, 32), tensor.Pow(mixed, p, f32))
	}
	get("Div", tensor.Div(wide, up(append(detVals(8, n, 3, true), detWide(9, n, 20, 20)...)), f32))
	get("Div/broadcast", tensor.Div(up(detVals(10, 64*7, 5, true)[:64*7], 64, 7), up(detVals(11, 7, 3, true)[:7], 1, 7), f32))

	// Rows: layer norm at three widths (3: the partial sums' tail; 300 and
	// 5000: lavapipe's texel form, SwiftShader's storage buffers), and the
	// softmax backward passes.
	for _, cols := range []int{3, 300, 5000} {
		rows := 9
		x := up(detVals(uint64(20+cols), rows*cols, 3, true)[:rows*cols], rows, cols)
		g := up(detVals(uint64(21+cols), cols, 2, true)[:cols])
		b := up(detVals(uint64(22+cols), cols, 1, true)[:cols])
		y, st := tensor.LayerNorm(x, g, b, 1e-5)
		dyr := up(detVals(uint64(23+cols), rows*cols, 1, true)[:rows*cols], rows, cols)
		dx, dg, db := tensor.LayerNormBackward(dyr, x, g, st)
		get("LayerNorm/"+strconv.Itoa(cols), y, st)
		get("LayerNormBackward/"+strconv.Itoa(cols), dx, dg, db)
		sm := tensor.SoftmaxAxis(x, 1)
		keep = append(keep, sm)
		get("SoftmaxBackward/"+strconv.Itoa(cols), tensor.SoftmaxBackward(sm, dyr, 1))
		lsm := tensor.LogSoftmaxAxis(x, 1)
		keep = append(keep, lsm)
		get("LogSoftmaxBackward/"+strconv.Itoa(cols), tensor.LogSoftmaxBackward(lsm, dyr, 1))
	}
	labels := tensor.FromInt32(d, []int32{0, 2, 1, 2}, 4)
	keep = append(keep, labels)
	get("NLLBackward", tensor.NLLBackward(up(detVals(30, 12, 3, true)[:12], 4, 3), labels, up([]float32{0.3}), 0.25))

	// Batch norm, training with running statistics and in evaluation.
	{
		const bn, bc, bs = 6, 5, 37
		x := up(detVals(40, bn*bc*bs, 4, true)[:bn*bc*bs], bn, bc, bs)
		g := up(detVals(41, bc, 2, true)[:bc])
		b := up(detVals(42, bc, 1, true)[:bc])
		rm := up(detVals(43, bc, 1, true)[:bc])
		rv := up(detVals(44, bc, 2, false)[:bc])
		cnt := tensor.FromInt32(d, []int32{0}, 1)
		keep = append(keep, cnt)
		run := &tensor.BatchNormRunning{Mean: rm, Var: rv, Count: cnt}
		y, st := tensor.BatchNorm(x, g, b, tensor.BatchNormOpts{Training: true, Running: run, Momentum: 0.1, Eps: 1e-5})
		get("BatchNorm", y, st)
		dyb := up(detVals(45, bn*bc*bs, 1, true)[:bn*bc*bs], bn, bc, bs)
		dx, dg, db := tensor.BatchNormBackward(dyb, x, g, st, true)
		get("BatchNormBackward", dx, dg, db)
		ye, ste := tensor.BatchNorm(x, g, b, tensor.BatchNormOpts{Running: run, Eps: 1e-5})
		get("BatchNorm/eval", ye, ste)
		dx, dg, db = tensor.BatchNormBackward(dyb, x, g, ste, false)
		get("BatchNormBackward/eval", dx, dg, db)
		read("BatchNorm/running", rm, rv)
	}

	// Embedding backward: repeated indices, summed in index order.
	{
		const ni, cols, vocab = 500, 33, 17
		rng := rand.New(rand.NewPCG(50, 1))
		idx := make([]int32, ni)
		for i := range idx {
			idx[i] = int32(rng.IntN(vocab))
		}
		ti := tensor.FromInt32(d, idx, ni)
		keep = append(keep, ti)
		get("EmbeddingBackward", tensor.EmbeddingBackward(ti, up(detVals(51, ni*cols, 2, true)[:ni*cols], ni, cols), vocab))
	}

	// Ops along an axis (ArgMax and ArgMin compare bits, no arithmetic;
	// CumSum adds in a fixed order, chunked past 4096), and the
	// constructors.
	{
		x := up(detVals(80, n, 5, true)[:n], 60, 50)
		get("ArgMax", tensor.ArgMax(x, 1, false), tensor.ArgMax(x, 0, true))
		get("ArgMin", tensor.ArgMin(x, -1, false), tensor.ArgMin(x, 0, false))
		get("CumSum", tensor.CumSum(up(detVals(81, n, 3, true)), 0, f32))
		get("CumSum/f16", tensor.CumSum(x, 0, f16))
		long := up(detVals(82, 2*9000, 2, true)[:2*9000], 2, 9000)
		get("CumSum/long", tensor.CumSum(long, 1, f32))
		get("CumSumReverse/long", tensor.CumSumReverse(long, 1, f32), tensor.CumSumReverse(x, 0, f16))
		get("Arange", tensor.Arange(d, f32, -3.5, 1000.25, 0.37), tensor.Arange(d, tensor.Int32, -7, 5000, 3))
		get("Arange/bf16", tensor.Arange(d, tensor.BFloat16, 100, -20, -0.13))
		tv, ti := tensor.TopK(x, 7)
		get("TopK", tv, ti)
		sv, si := tensor.Sort(x, false)
		get("Sort", sv, si, tensor.ArgSort(x, true))
		oh := tensor.FromInt32(d, []int32{3, 0, 9, 4, 4, 1}, 2, 3)
		keep = append(keep, oh)
		get("OneHot", tensor.OneHot(oh, 10, tensor.Int32), tensor.OneHot(oh, 10, f16))
		probs := up(detWide(83, 40*30, 0, 2)[:40*30], 40, 30)
		p16 := tensor.Cast(probs, f16)
		keep = append(keep, p16)
		get("Multinomial", tensor.Multinomial(probs, 50, 9), tensor.Multinomial(p16, 5, 10))
	}

	// Optimizers and clipping: three steps each over two parameters.
	optim := func(name string, moments int, step func(*tensor.OptimizerState) error) {
		t.Helper()
		var vs, gs []*tensor.Tensor
		for i, m := range []int{1000, 77} {
			vs = append(vs, up(detVals(uint64(60+i), m, 1, true)[:m]))
			gs = append(gs, up(detVals(uint64(62+i), m, 0.1, true)[:m]))
		}
		st, err := tensor.NewOptimizerState(vs, gs, moments)
		require.NoError(t, err)
		defer st.Close()
		for range 3 {
			require.NoError(t, step(st), name)
		}
		res := vs
		for m := range moments {
			res = append(res, st.Moments(m)...)
		}
		read(name, res...)
	}
	optim("SGD", 1, func(s *tensor.OptimizerState) error {
		return s.SGDStep(tensor.SGDConfig{LR: 0.1, Momentum: 0.9, Dampening: 0.1, WeightDecay: 0.01, Nesterov: true}, nil)
	})
	optim("Adadelta", 2, func(s *tensor.OptimizerState) error {
		return s.AdadeltaStep(tensor.AdadeltaConfig{LR: 1, Rho: 0.9, Eps: 1e-6, WeightDecay: 0.01}, nil)
	})
	optim("AdamW", 2, func(s *tensor.OptimizerState) error {
		return s.AdamStep(tensor.AdamConfig{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, Decoupled: true}, nil)
	})
	{
		var xs []*tensor.Tensor
		for i, m := range []int{5000, 300, 7} {
			xs = append(xs, up(detVals(uint64(70+i), m, 1, true)[:m]))
		}
		var tab tensor.BlockTable
		norm, err := tensor.ClipNorm(xs, 0.5, 1e-6, &tab)
		require.NoError(t, err)
		keep = append(keep, norm)
		read("ClipNorm", append([]*tensor.Tensor{norm}, xs...)...)
		require.NoError(t, tab.Close())
	}
	return outs
}
