package tensor_test

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// detModelHashes are the sha256 of the bytes of each result of
// TestDeterministicModelKernels, the same on every driver and tier
// (recorded on lavapipe; SwiftShader and lavapipe's packed and storage16
// tiers gave the same). A kernel change that moves one must move it on
// every driver alike: rerun the test on each and update.
var detModelHashes = map[string]string{
	"float16/adaptive/dx":          "ab4345ce04e9e2b3ccf26f89e9a4438b406e4bf802216b40c5ce6e4378135a3e",
	"float16/adaptive/y":           "5ff957538b3ca9be6516d822e49db82f71f46e9673c8bbf3556b9034ac4218db",
	"float16/attention/dqkv/":      "0b06b5a045e8e0b64de72091ce1c12d167601267b1b532f51df08b06e39cb479",
	"float16/attention/dqkv/texel": "0b06b5a045e8e0b64de72091ce1c12d167601267b1b532f51df08b06e39cb479",
	"float16/attention/lse/":       "c8834b5c36dd71854e7869048d50864616a0bb891b7e62ee39c3282b8c7f03af",
	"float16/attention/lse/texel":  "c8834b5c36dd71854e7869048d50864616a0bb891b7e62ee39c3282b8c7f03af",
	"float16/attention/y/":         "0b778d9b7412b2cfa2b27bec2e6f97b5824d664907df7788825ec0af1b795daf",
	"float16/attention/y/texel":    "0b778d9b7412b2cfa2b27bec2e6f97b5824d664907df7788825ec0af1b795daf",
	"float16/avgpool/dx":           "f82d9ecda0461740c61e49f5407b56b2a1784bd32530d3ddf7821fd1b81c1960",
	"float16/avgpool/y":            "7d02fe665ff5a0f7426fe487de9b0c2e6327dd41938b793795ead60c7bb62592",
	"float16/conv/same/0/db":       "75fd4e17c233aa4481a6182ae62b373bccea4ac8ddb686e346237e7e4f557421",
	"float16/conv/same/0/dw":       "414233455fd651ef59be7d8413c6c38adb54c403e9919ed8d28a57c03161b4f2",
	"float16/conv/same/0/dx":       "7431dc2affb5becf0d30f6e5f93a4a72b961e944b9bb74c5d9c3ce48b1ec2451",
	"float16/conv/same/0/y":        "86798c6df318a3f42e1c5769781deebdd2ea7ba64ae4555a63e0c62bd46633c6",
	"float16/conv/same/1/db":       "75fd4e17c233aa4481a6182ae62b373bccea4ac8ddb686e346237e7e4f557421",
	"float16/conv/same/1/dw":       "414233455fd651ef59be7d8413c6c38adb54c403e9919ed8d28a57c03161b4f2",
	"float16/conv/same/1/dx":       "7431dc2affb5becf0d30f6e5f93a4a72b961e944b9bb74c5d9c3ce48b1ec2451",
	"float16/conv/same/1/y":        "86798c6df318a3f42e1c5769781deebdd2ea7ba64ae4555a63e0c62bd46633c6",
	"float16/conv/stride2/0/db":    "c382a0f3a754a4db459800877eee10de09fde6e7df4116b0e37fce88405ab08e",
	"float16/conv/stride2/0/dw":    "6cac332360392392629edaca02233935f882d040f6eac589dd5c17cd80da954d",
	"float16/conv/stride2/0/dx":    "c00fcd40f6f3c10505b950475707f93980dc5af489141978564e415249071419",
	"float16/conv/stride2/0/y":     "c122947834633af14ccfb66bf4fa82885b7270006c41d523183a8ba718520c90",
	"float16/conv/stride2/1/db":    "c382a0f3a754a4db459800877eee10de09fde6e7df4116b0e37fce88405ab08e",
	"float16/conv/stride2/1/dw":    "6cac332360392392629edaca02233935f882d040f6eac589dd5c17cd80da954d",
	"float16/conv/stride2/1/dx":    "c00fcd40f6f3c10505b950475707f93980dc5af489141978564e415249071419",
	"float16/conv/stride2/1/y":     "c122947834633af14ccfb66bf4fa82885b7270006c41d523183a8ba718520c90",
	"float16/dropout":              "e3f2df81b72d5012e43d152ba0b1093eb004f36c32ae88be1b9d6a02bdc91e2d",
	"float16/embedding/dw":         "4b75ec88bc250236ae196f89e0cf58c30cde278cc5307cc99767428643c2c3d6",
	"float16/logsoftmax/dx":        "82989bd426fefa324c0266adaffb194414b8eecb1d84bc1ed7f0bf829b1a1730",
	"float16/maxpool/argmax":       "4fa71e7d2c1c82aaba84a5e79a0ffe744f906ec4810b17610f2dbb168e57c2f7",
	"float16/maxpool/dx":           "a5aa7b30c5f568bfceed5ba9f5902beaa1e75ed68f8934acc29fdebd7baf3d11",
	"float16/maxpool/y":            "2d0d1c378dc11b0501b19a33dcdf988dfa50b29cf4ae506d883a73a37e4c9b4c",
	"float16/softmax/dx":           "80702fd92ce373ce74098ae749d6475f0c568231d2aa47bf81fb7fb9070445e7",
	"float32/adaptive/dx":          "b79a0d3e14873cc2a1f3bdfd0aad9dbd6851252f950587ab297e223de757764b",
	"float32/adaptive/y":           "5a8870d930d20452b609cf41b2f3325e2184167b58f61fb34563ca58b6320408",
	"float32/attention/dqkv/":      "93e1e5e9a73c0c4366b69f6ce1446a97b113084ab5d082e154015346ba41cc10",
	"float32/attention/dqkv/texel": "93e1e5e9a73c0c4366b69f6ce1446a97b113084ab5d082e154015346ba41cc10",
	"float32/attention/lse/":       "28f09015d1a60ab0b9550b180afa3c6f44879a937a6066c94c5ea0159f65296d",
	"float32/attention/lse/texel":  "28f09015d1a60ab0b9550b180afa3c6f44879a937a6066c94c5ea0159f65296d",
	"float32/attention/y/":         "52899a0d0edb66547e2d31c285d79a3a6697caf504285ccf18087f980741060f",
	"float32/attention/y/texel":    "52899a0d0edb66547e2d31c285d79a3a6697caf504285ccf18087f980741060f",
	"float32/avgpool/dx":           "863454d5ae9a71964f57aa53b7de00f486968b4f2dae3ff0c526a554b5c7b99f",
	"float32/avgpool/y":            "3012349fba3c305b9ed3ba05e795cc75cf6811c061033aa0a08708c0f99783eb",
	"float32/conv/same/0/db":       "6b50a94090dadbc738ac1c12058e070c2aa22add427cacbfb5758ededa9960ba",
	"float32/conv/same/0/dw":       "30cb06bade4d80ed475bf870e03f97d77ebdc4381b94803629c641cc8c8a3294",
	"float32/conv/same/0/dx":       "0b0cf3ee670b21a759a54f4fb0b7085fb98974c69ef23e57acb20b0f49d9276e",
	"float32/conv/same/0/y":        "6aceb67960c897c94ba94d6ec63f537201b7139914a4cd649296c8f6872759cb",
	"float32/conv/same/1/db":       "6b50a94090dadbc738ac1c12058e070c2aa22add427cacbfb5758ededa9960ba",
	"float32/conv/same/1/dw":       "30cb06bade4d80ed475bf870e03f97d77ebdc4381b94803629c641cc8c8a3294",
	"float32/conv/same/1/dx":       "0b0cf3ee670b21a759a54f4fb0b7085fb98974c69ef23e57acb20b0f49d9276e",
	"float32/conv/same/1/y":        "6aceb67960c897c94ba94d6ec63f537201b7139914a4cd649296c8f6872759cb",
	"float32/conv/stride2/0/db":    "d09069d5bfd8e42d47f448b23f53654a676ed7ce62ad5c567682958fc3b030cf",
	"float32/conv/stride2/0/dw":    "a2635160c1b1639746634943af2c4d0dce21541ae8207a552a236d6c383a9b12",
	"float32/conv/stride2/0/dx":    "f7cdde9d2d6e5d5b2f3aafde3105581f15bc1f81622a6b1a490775e22a7c6e4d",
	"float32/conv/stride2/0/y":     "4fad7fdae058dbd87bfe17d3d15c324c5dfa8df817ca3a868574b933af1230e5",
	"float32/conv/stride2/1/db":    "d09069d5bfd8e42d47f448b23f53654a676ed7ce62ad5c567682958fc3b030cf",
	"float32/conv/stride2/1/dw":    "a2635160c1b1639746634943af2c4d0dce21541ae8207a552a236d6c383a9b12",
	"float32/conv/stride2/1/dx":    "f7cdde9d2d6e5d5b2f3aafde3105581f15bc1f81622a6b1a490775e22a7c6e4d",
	"float32/conv/stride2/1/y":     "4fad7fdae058dbd87bfe17d3d15c324c5dfa8df817ca3a868574b933af1230e5",
	"float32/dropout":              "8bfb34d1a8f458e3613d07fd5525faf182d60a4d382eaa680c4cadae57171bf9",
	"float32/embedding/dw":         "ba9b429d5bcce49f20aee1c9c40c86647ba6a972aad875217639c6700e3125a0",
	"float32/logsoftmax/dx":        "b48dc62bcb9df04574608914dd2ffb1e9c3f5ea96d9533e741f2aa6f599d275a",
	"float32/maxpool/argmax":       "4fa71e7d2c1c82aaba84a5e79a0ffe744f906ec4810b17610f2dbb168e57c2f7",
	"float32/maxpool/dx":           "ef32324f2589db8308b5e9cdb866131da8fe60a745842d7cf5a59162ae6bc175",
	"float32/maxpool/y":            "df57232423a2526452180a12f92ac347e5699f2a46e533625556ee7a12d8eff3",
	"float32/softmax/dx":           "4f851982acf9ea20031b6998bb00317ca30f72f8e6fb1ee4986cb522f023b41a",
}

// TestDeterministicModelKernels runs the transformer's and the CNN's
// structural kernels in deterministic mode on fixed inputs and compares the
// bytes of every result with the hashes every driver and tier must give:
// causal attention and its backward, conv2d and both its gradients, max,
// average and adaptive pooling and their backwards, the embedding's
// gradient, dropout, and the softmax and log-softmax backwards, in fp32 and
// fp16. The kernel choices a device would make otherwise (the texel
// attention kernels, conv_tex) are forced too: the mode must override them.
func TestDeterministicModelKernels(t *testing.T) {
	d := devtest.Open(t, vk.Options{Deterministic: true})
	got := map[string]string{}
	hash := func(name string, x *tensor.Tensor) {
		t.Helper()
		b, err := x.Bytes()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		s := sha256.Sum256(b)
		got[name] = hex.EncodeToString(s[:])
		x.Release()
	}
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float16} {
		p := dt.String() + "/"
		for _, kind := range []string{"", "texel"} {
			prev := tensor.SetAttentionKernel(kind)
			// B=2, T=37 (past two blocks, mid-workgroup), 2 heads of 16.
			qkv, _ := opRand(t, d, 1, 2, dt, 2*37, 3*32)
			dy, _ := opRand(t, d, 2, 1, dt, 2*37, 32)
			y, lse := tensor.CausalAttention(qkv, 2, 2, 0.25)
			dqkv := tensor.CausalAttentionBackward(qkv, y, lse, dy, 2, 2, 0.25)
			hash(p+"attention/y/"+kind, y)
			hash(p+"attention/lse/"+kind, lse)
			hash(p+"attention/dqkv/"+kind, dqkv)
			tensor.SetAttentionKernel(prev)
		}
		for _, mode := range []int{0, 1} {
			tensor.SetConvImplicit(mode)
			for _, c := range []struct {
				name string
				o    tensor.Conv2dOpts
			}{{"same", tensor.Conv2dOpts{Padding: [2]int{1, 1}}}, {"stride2", tensor.Conv2dOpts{Stride: [2]int{2, 2}}}} {
				n := p + "conv/" + c.name + "/" + string(rune('0'+mode)) + "/"
				x, _ := opRand(t, d, 3, 1, dt, 3, 8, 10, 10)
				w, _ := opRand(t, d, 4, 0.3, dt, 16, 8, 3, 3)
				b, _ := opRand(t, d, 5, 0.5, tensor.Float32, 16)
				y := tensor.Conv2d(x, w, b, c.o)
				g, _ := opRand(t, d, 6, 1, dt, y.Shape()...)
				dx := tensor.Conv2dBackwardInput(g, w, x.Shape(), c.o)
				dw, db := tensor.Conv2dBackwardWeight(g, x, w.Shape(), c.o)
				hash(n+"y", y)
				hash(n+"dx", dx)
				hash(n+"dw", dw)
				hash(n+"db", db)
			}
		}
		tensor.SetConvImplicit(0)
		x, _ := opRand(t, d, 7, 3, dt, 2, 3, 11, 9)
		k, s, pad := [2]int{3, 3}, [2]int{2, 2}, [2]int{1, 1}
		ym, am := tensor.MaxPool2d(x, k, s, pad)
		g, _ := opRand(t, d, 8, 1, dt, ym.Shape()...)
		hash(p+"maxpool/dx", tensor.MaxPool2dBackward(g, am, x.Shape(), k, s, pad))
		hash(p+"maxpool/y", ym)
		hash(p+"maxpool/argmax", am)
		ya := tensor.AvgPool2d(x, k, s, pad)
		hash(p+"avgpool/dx", tensor.AvgPool2dBackward(g, x.Shape(), k, s, pad))
		hash(p+"avgpool/y", ya)
		yd := tensor.AdaptiveAvgPool2d(x, 4, 5)
		gd, _ := opRand(t, d, 9, 1, dt, yd.Shape()...)
		hash(p+"adaptive/dx", tensor.AdaptiveAvgPool2dBackward(gd, x.Shape()))
		hash(p+"adaptive/y", yd)

		ids := make([]int32, 6*16)
		for i := range ids {
			ids[i] = int32((i*7 + i/5) % 11)
		}
		idx := tensor.FromInt32(d, ids, 6, 16)
		gy, _ := opRand(t, d, 10, 1, dt, 6, 16, 24)
		hash(p+"embedding/dw", tensor.EmbeddingBackward(idx, gy, 11))
		idx.Release()
		hash(p+"dropout", tensor.Dropout(gy, 0.3, 12345))

		// Rows of a softmax with exponents spread wide, and their gradients.
		sx, _ := opRand(t, d, 11, 20, dt, 2, 3, 40)
		sy := tensor.SoftmaxAxis(sx, 2)
		ly := tensor.LogSoftmaxAxis(sx, 2)
		sg, _ := opRand(t, d, 12, 1, dt, 2, 3, 40)
		hash(p+"softmax/dx", tensor.SoftmaxBackward(sy, sg, 2))
		hash(p+"logsoftmax/dx", tensor.LogSoftmaxBackward(ly, sg, 2))
		sy.Release()
		ly.Release()
	}
	names := make([]string, 0, len(got))
	for n := range got {
		names = append(names, n)
	}
	slices.Sort(names)
	bad := 0
	for _, n := range names {
		if want := detModelHashes[n]; got[n] != want {
			bad++
			t.Errorf("%s: sha256 %s, want %s", n, got[n], want)
		}
	}
	if bad > 0 {
		for _, n := range names {
			t.Logf("\t%q: %q,", n, got[n])
		}
	}
	// The forced texel attention kernels and conv_tex must not change a bit.
	for _, n := range names {
		for _, pair := range [][2]string{{"/texel", "/"}, {"/1/", "/0/"}} {
			if other := replaceSuffix(n, pair[0], pair[1]); other != n && got[other] != got[n] {
				t.Errorf("%s differs from %s: the deterministic mode did not override the kernel choice", n, other)
			}
		}
	}
}

// replaceSuffix replaces the last occurrence of old in s with new.
func replaceSuffix(s, old, new string) string {
	for i := len(s) - len(old); i >= 0; i-- {
		if s[i:i+len(old)] == old {
			return s[:i] + new + s[i+len(old):]
		}
	}
	return s
}
