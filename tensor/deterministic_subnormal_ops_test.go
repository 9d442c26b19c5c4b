package tensor_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// detSubOpHashes pins the SHA-256 of each op's outputs on
// detSubnormalOutputs' inputs (subnormal fp32 operands beside normal ones)
// in deterministic mode. Pinned on lavapipe; the same on SwiftShader and at
// the packed and storage16 tiers. Before det.glsl flushed the inputs of
// every operation, SwiftShader (which reads subnormals as zero) differed
// from lavapipe here.
var detSubOpHashes = map[string]string{
	"AddBias":                 "6ecc85d709f11840d026a2143e48255edd4c0676d5b7f4c46c95e6e96c7f8263",
	"Axpy":                    "9f8c04ab525648ba0c6c39e8f3f332a1ef205899c75814b7c9254205febb974c",
	"BroadcastItem":           "3addfb141cd7c9c4c6543a82191a3707ac29c7a041217782e61d4d91c691aee8",
	"ClipNorm/tiny":           "baed30feef4590701372ccd993cc120b41242efd951cd3064ae9607ea2435671",
	"LossScale/2^127/Scale":   "ca82fe0a8e9b2f5800e7bef7fbb3feeb88008e81ab2c7dd88ca4beae4e29c941",
	"LossScale/2^127/Unscale": "1a2d0acdd3df03c979b519a86d01475eb42290c1af6742ce780a68eb715e1a84",
	"LossScale/2^20/Scale":    "7d28c6e679da5f021ef256147fccaeb9aa7816d3d70d58303a9beaa60cfb45e9",
	"LossScale/2^20/Unscale":  "edcb2065cb63df9005841d9bb3ec182721841f18485f2245d7425caac5aec2e5",
	"ScaleByItem":             "27e63be1ee4de2be08c3f666646a83696ec612f60c865acbe1fb42323c72c85b",
	"Accumulate":              "fb4856c8db833e48ae16f22862b0013532a40bc918b106331bb4b9b7492b9557",
	"MaxPool2d/tiny":          "0cc1ef75be9e877c2a99ee086a7a33cd7d73b7af7e37cd85038a2ba7cde95b3d",
	"Max/0/tiny":              "840971d2f2e63551d625210c69a160a97dff714ee7231de46a8d3c301347d2b1",
	"Max/tiny":                "5971e89ebf968c36f627b287003011ed0170149bdbd10cbca7bcd8a8a06d93d5",
	"MeanAxis/1/tiny":         "1e75ae3b6b7df4e367096caa82059571c20718fe846cf8c2c742cbb92ffd47ff",
	"Sum/tiny":                "80904b49f2b5e5066f3ef5f2b900f81da23d1f9001f63c4cc28ebdd516be1317",
	"SumAxis/0/tiny":          "b63c7c6123608d65e3b90f4807cf5a12d81ca6d66cb09afc7e0df0405d45f96d",
	"SumAxis/1/tiny":          "aea45c7f4f3bae0ea6233802f8dac0ae0de6cf15e999df03c21576b62e7e6ff4",
	"SumSquares/tiny":         "e552b7e3c3086861ccdd0e02fde463e570facf2fa6da8fb3d120c4ccf7d6e64c",
	"Adam":                    "de87cd85a0661a5de8801ecb8e550a5c8529fe7e0712e49c5bdb3a7ff12b38a2",
	"Cast/bf16":               "ac81286b9ee0a51db635bd8b8af0335bb913129f40ae375ec1bcf9fc05c205d6",
	"Cast/bf16/f32":           "75d4b36119fc4895e2368a4086770657da9499dd63cdbcc259b261af64074672",
	"Cast/f16":                "06ae1859c993eda969401d3ea2cf77042ebe11301266f44c26843cb6a6092916",
	"CrossEntropyBackward":    "8e8d5a68eb3c7a596f205f920de7eafd80dc32f15c3456e7c9387863c5daf560",
	"Div":                     "fc436be1ae89693afadf680b4f934c5618520c23e77e07f5b8ed5a8db8c0104b",
	"Exp":                     "707cdceaf57a69e8eefefcf31fa39c10ff1a905b7950b22b4b718277dfb87fe9",
	"GELU":                    "ac87763becd3846fde3ab8d137a8cf9abf234bcd23b62bacef3e12f838478e43",
	"GELUBackward":            "5b9db5266a710e49a2c512ea2c6b166f20b986870ee5a97822c0a9057465106f",
	"GELUTanh":                "5fb0fb5cbc69316ef115737af5f2f7d4c311a767abed22e7a009159f0932c46c",
	"LayerNorm":               "a804412f3f029215e9b18a51ec72da174f8afb7f55da31c6dfa93ec33c7a0e70",
	"LayerNormBackward":       "41488f9a301660a7ed9146fdcf7829d67ee52774cf22515a63063b0d69ff6a43",
	"LogSoftmax":              "63312008ae5beec713f1afbede294c0429664197d0588f33225e4023f5586b45",
	"MatMul":                  "e9891e4bba7c7c4951cd5577fc2c24c85670db5e355e2451422c25c3b76b1f12",
	"MatMul/bias":             "9884791154618d60bc2e98edded4b20b0161eb6a56fa6f7f5eeef7e20e299973",
	"MatMul/epilogue":         "51501284099b1d8324d32af7f60705b45eaba83677433cc0f1db2a7207e23b39",
	"Max":                     "ad38a04336be3d8b9b1b3aeea155e9fc4830accbfa818c3d845a43f3b3250e6c",
	"ReLU":                    "628bd44198ef78ed460bf14f657dd986d8dcc601a58fb3dfdfb775d3357a8b3d",
	"ReLUBackward":            "25c9fe36fa7ed22c3effb3daeac7ac4c5ecbfd09c96efc2e47e6706b4c83d839",
	"Scale":                   "683394983194a8c9c4dd28e45f733642cee381090b849a188a729b14b6279be6",
	"Softmax":                 "e29c9130438f473a63ffc63be33d93e2c1490867d8e343854913393cf21a5536",
	"Sum":                     "c0e4f60ef734e8e8c6425ce68804f062687f67e3bb607aa3f6c8669a9926d786",
	"SumAxis/0":               "fda47c6ed4fc59eedf894c6f9e7ef49a2b19efe5dfd28551de4f5689a34fb371",
	"SumAxis/1":               "80e41325d1abb04e1333a989a3168cad26a1c13d192e019f5c437489a290dde7",
	"Tanh":                    "2d81d2787911ca626146c4415dbd6048e4cb2b93370318bc4bbbf0a4a67f01c3",
}

// detSubVals returns n floats from seed: a third subnormal, a third near
// 2^-126, a third ordinary (|x| in [2^-8, 2^8)), each of random sign.
func detSubVals(seed uint64, n int) []float32 {
	rng := rand.New(rand.NewPCG(seed, 13))
	v := make([]float32, n)
	for i := range v {
		var x float64
		switch rng.IntN(3) {
		case 0:
			x = rng.Float64() * 0x1p-126
		case 1:
			x = (1 + rng.Float64()) * math.Ldexp(1, rng.IntN(8)-130)
		default:
			x = (1 + rng.Float64()) * math.Ldexp(1, rng.IntN(16)-8)
		}
		if rng.IntN(2) == 0 {
			x = -x
		}
		v[i] = float32(x)
	}
	return v
}

// TestDeterministicSubnormalOps runs the kernels beyond add, sub and mul on
// inputs with subnormal operands and checks their outputs' hashes against
// the pinned ones: the same bits on every driver and tier although
// SwiftShader reads subnormal inputs as zero and lavapipe does not.
func TestDeterministicSubnormalOps(t *testing.T) {
	d := devtest.Open(t, vk.Options{Deterministic: true})
	outs := detSubnormalOutputs(t, d)
	checkPinnedHashes(t, outs, detSubOpHashes)
}

// detSubnormalOutputs computes each op on subnormal-rich inputs on d and
// returns its outputs' bytes by name.
func detSubnormalOutputs(t *testing.T, d *vk.Device) map[string][]byte {
	t.Helper()
	outs := map[string][]byte{}
	var keep []*tensor.Tensor
	t.Cleanup(func() {
		for _, x := range keep {
			x.Release()
		}
	})
	up := func(v []float32, shape ...int) *tensor.Tensor {
		x := tensor.FromFloat32(d, v, shape...)
		keep = append(keep, x)
		return x
	}
	get := func(name string, xs ...*tensor.Tensor) {
		t.Helper()
		keep = append(keep, xs...)
		var b []byte
		for _, x := range xs {
			xb, err := x.Bytes()
			require.NoError(t, err, name)
			b = append(b, xb...)
		}
		outs[name] = b
	}
	f32 := tensor.Float32
	const rows, cols = 16, 40
	x := up(detSubVals(1, rows*cols), rows, cols)
	y := up(detSubVals(2, rows*cols), rows, cols)

	// MatMul: subnormal times large gives a normal product where a driver
	// keeps subnormals.
	big := detSubVals(3, cols*24)
	for i := range big {
		big[i] *= 0x1p100
	}
	b := up(big, cols, 24)
	bias := up(detSubVals(4, 24), 24)
	c := up(detSubVals(5, rows*24), rows, 24)
	get("MatMul", tensor.MatMul(x, b, tensor.MatMulOpts{}))
	get("MatMul/epilogue", tensor.MatMul(x, y, tensor.MatMulOpts{TransB: true, Bias: up(detSubVals(6, rows), rows), Beta: 0.5, C: up(detSubVals(7, rows*rows), rows, rows)}))
	// Products near 2^-126, where the bias and C are not negligible.
	small := detSubVals(3, cols*24)
	for i := range small {
		small[i] *= 0x1p-118
	}
	get("MatMul/bias", tensor.MatMul(x, up(small, cols, 24), tensor.MatMulOpts{Bias: bias, Beta: 1, C: c}))

	// Reductions of tiny values only (subnormal or near 2^-126), where
	// flushed inputs change sums and which subnormal is the largest.
	tv := detSubVals(14, rows*cols)
	for i := range tv {
		if math.Abs(float64(tv[i])) > 0x1p-100 {
			tv[i] *= 0x1p-134
		}
	}
	tiny := up(tv, rows, cols)
	get("Sum/tiny", tensor.Sum(tiny))
	get("SumAxis/0/tiny", tensor.SumAxis(tiny, 0))
	get("SumAxis/1/tiny", tensor.SumAxis(tiny, 1))
	get("MeanAxis/1/tiny", tensor.MeanAxis(tiny, 1))
	get("SumSquares/tiny", tensor.SumSquares(up(detSubVals(15, 300), 300)))
	get("Max/tiny", tensor.MaxAxis(tiny, 1))
	get("Max/0/tiny", tensor.MaxAxis(tiny, 0))
	rt := tensor.Reshape(tiny, 1, 4, 8, 20)
	keep = append(keep, rt)
	ym, am := tensor.MaxPool2d(rt, [2]int{3, 3}, [2]int{2, 2}, [2]int{1, 1})
	get("MaxPool2d/tiny", ym, am)
	get("Sum", tensor.Sum(x))
	get("SumAxis/0", tensor.SumAxis(x, 0))
	get("SumAxis/1", tensor.SumAxis(x, 1))
	get("Max", tensor.MaxAxis(x, 1))
	get("Softmax", tensor.Softmax(x))
	lsm := tensor.LogSoftmax(x)
	get("LogSoftmax", lsm)
	labels := make([]int32, rows)
	for i := range labels {
		labels[i] = int32(i * 7 % cols)
	}
	tl := tensor.FromInt32(d, labels, rows)
	keep = append(keep, tl)
	get("CrossEntropyBackward", tensor.CrossEntropyBackward(x, tl, up(detSubVals(8, 1), 1), 0.25))
	g := up(detSubVals(9, cols), cols)
	beta := up(detSubVals(10, cols), cols)
	ln, st := tensor.LayerNorm(x, g, beta, 1e-5)
	get("LayerNorm", ln, st)
	dx, dg, db := tensor.LayerNormBackward(y, x, g, st)
	get("LayerNormBackward", dx, dg, db)
	get("GELU", tensor.GELU(x, f32))
	get("GELUTanh", tensor.GELUTanh(x, f32))
	get("GELUBackward", tensor.GELUBackward(y, x, f32))
	get("Tanh", tensor.Tanh(x, f32))
	get("Exp", tensor.Exp(x, f32))
	get("Div", tensor.Div(x, y, f32))
	get("Scale", tensor.Scale(x, 0x1p60, f32))
	get("ReLU", tensor.ReLU(x, f32))
	get("ReLUBackward", tensor.ReLUBackward(y, x, f32))
	get("Cast/f16", tensor.Cast(x, tensor.Float16))
	get("Cast/bf16", tensor.Cast(x, tensor.BFloat16))
	bx := tensor.Cast(x, tensor.BFloat16)
	keep = append(keep, bx)
	get("Cast/bf16/f32", tensor.Cast(bx, f32))

	acc := tensor.FromFloat32(d, detSubVals(16, rows*cols), rows, cols)
	require.NoError(t, tensor.Accumulate(acc, x))
	get("Accumulate", acc)

	// The scaler and clipping multiply by a scale held on the device:
	// subnormal gradients (and, with a scale of 2^127, a subnormal
	// reciprocal) that SwiftShader reads as zero.
	scaleAndUnscale := func(name string, scale float64, grads ...*tensor.Tensor) {
		t.Helper()
		ls := tensor.NewLossScale(scale, 0)
		defer ls.Close()
		get(name+"/Scale", ls.Scale(x))
		found := tensor.New(d, f32, 1)
		var tab tensor.BlockTable
		defer tab.Close()
		require.NoError(t, ls.Unscale(grads, found, &tab))
		get(name+"/Unscale", append([]*tensor.Tensor{found}, grads...)...)
	}
	half := tensor.Cast(up(detSubVals(17, 301), 301), tensor.Float16)
	scaleAndUnscale("LossScale/2^20", 0x1p20, up(detSubVals(18, 500), 500), half)
	scaleAndUnscale("LossScale/2^127", 0x1p127, up(detSubVals(19, 500), 500))
	{
		var tab tensor.BlockTable
		xs := []*tensor.Tensor{up(detSubVals(20, 500), 500)}
		norm, err := tensor.ClipNorm(xs, 1, 0, &tab)
		require.NoError(t, err)
		get("ClipNorm/tiny", append([]*tensor.Tensor{norm}, xs...)...)
		require.NoError(t, tab.Close())
	}
	get("AddBias", tensor.AddBias(x, up(detSubVals(21, cols), cols), f32))
	get("Axpy", tensor.Axpy(0x1p-3, x, y, f32))
	item := up([]float32{0x1p-20}, 1)
	get("ScaleByItem", tensor.ScaleByItem(x, item, 3, f32))
	get("BroadcastItem", tensor.BroadcastItem(up([]float32{0x1p-120}, 1), 0x1p-10, f32, 7))

	// Adam: subnormal parameters and gradients, three steps.
	vs := []*tensor.Tensor{up(detSubVals(11, 500), 500)}
	gs := []*tensor.Tensor{up(detSubVals(12, 500), 500)}
	ost, err := tensor.NewOptimizerState(vs, gs, 2)
	require.NoError(t, err)
	defer ost.Close()
	for range 3 {
		require.NoError(t, ost.AdamStep(tensor.AdamConfig{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01}, nil))
	}
	res := append(vs, ost.Moments(0)...)
	res = append(res, ost.Moments(1)...)
	var ab []byte
	for _, r := range res {
		rb, err := r.Bytes()
		require.NoError(t, err)
		ab = append(ab, rb...)
	}
	outs["Adam"] = ab
	return outs
}
