"""PyTorch reference for tools/gpt: nanoGPT's shakespeare_char model and
recipe (GPT-2 pre-LayerNorm blocks without biases, exact GELU, a head tied
to the token embedding, AdamW with weight decay on 2-D weights only, warm-up
then cosine decay, clipping at 1.0 after unscaling), trained with torch.amp
(fp16 with GradScaler, bf16, or fp32), printing one JSON line per
evaluation as `tools/gpt -json` does. tools/gpucheck/gpt.sh runs it beside
tools/gpt on the GPU machine; it also runs on a CPU (fp32):

    python3 tools/gpucheck/torch_gpt.py -recipe cpu -device cpu -precision f32
"""
import argparse
import contextlib
import json
import math
import time

import torch
import torch.nn.functional as F
from torch import nn

RECIPES = {
    "cpu": dict(layers=4, heads=4, dim=128, block=64, batch=12, iters=2000, eval_every=250, eval_iters=20, dropout=0.0),
    "gpu": dict(layers=6, heads=6, dim=384, block=256, batch=64, iters=5000, eval_every=250, eval_iters=200, dropout=0.2),
}
LR, MIN_LR, WARMUP, BETAS, DECAY, CLIP = 1e-3, 1e-4, 100, (0.9, 0.99), 0.1, 1.0


class LayerNorm(nn.Module):
    """LayerNorm without a bias (torch.nn.LayerNorm has bias=False only from 2.1)."""

    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, None, 1e-5)


class Block(nn.Module):
    def __init__(self, r):
        super().__init__()
        d, self.heads, self.p = r["dim"], r["heads"], r["dropout"]
        self.ln_1, self.ln_2 = LayerNorm(d), LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d, bias=False)
        self.attn_proj = nn.Linear(d, d, bias=False)
        self.c_fc = nn.Linear(d, 4 * d, bias=False)
        self.mlp_proj = nn.Linear(4 * d, d, bias=False)
        self.register_buffer("mask", torch.tril(torch.ones(r["block"], r["block"], dtype=torch.bool)), persistent=False)

    def attention(self, x):
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in self.c_attn(x).split(d, dim=2))
        p = self.p if self.training else 0.0
        if hasattr(F, "scaled_dot_product_attention"):  # flash attention where the device has it
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        else:
            a = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
            a = F.dropout(a.masked_fill(~self.mask[:t, :t], float("-inf")).softmax(-1), p, self.training)
            y = a @ v
        return F.dropout(self.attn_proj(y.transpose(1, 2).reshape(b, t, d)), self.p, self.training)

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        h = self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))
        return x + F.dropout(h, self.p, self.training)


class GPT(nn.Module):
    def __init__(self, r, vocab):
        super().__init__()
        self.wte = nn.Embedding(vocab, r["dim"])
        self.wpe = nn.Embedding(r["block"], r["dim"])
        self.blocks = nn.ModuleList(Block(r) for _ in range(r["layers"]))
        self.ln_f = LayerNorm(r["dim"])
        self.p = r["dropout"]
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, 0.0, 0.02)
        for b in self.blocks:  # GPT-2's scaled residual projections
            for w in (b.attn_proj.weight, b.mlp_proj.weight):
                nn.init.normal_(w, 0.0, 0.02 / math.sqrt(2 * r["layers"]))

    def forward(self, idx, targets):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = F.dropout(self.wte(idx) + self.wpe(pos), self.p, self.training)
        for b in self.blocks:
            x = b(x)
        logits = self.ln_f(x) @ self.wte.weight.t()  # the tied head
        return F.cross_entropy(logits.view(-1, logits.size(-1)).float(), targets.view(-1))


def lr_at(it, iters):
    if it < WARMUP:
        return LR * (it + 1) / (WARMUP + 1)
    ratio = min(1.0, (it - WARMUP) / (iters - WARMUP))
    return MIN_LR + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (LR - MIN_LR)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-data", default="testdata/tinyshakespeare/input.txt")
    ap.add_argument("-recipe", default="cpu", choices=RECIPES)
    ap.add_argument("-device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("-precision", choices=["f16", "bf16", "f32"], help="default: f16 on a GPU, f32 on a CPU")
    ap.add_argument("-iters", type=int, default=0, help="0: the recipe's; the schedule decays over them")
    ap.add_argument("-eval-every", type=int, default=0)
    ap.add_argument("-eval-iters", type=int, default=0)
    ap.add_argument("-seed", type=int, default=1337)
    ap.add_argument("-compile", action="store_true", help="torch.compile the model (PyTorch 2)")
    a = ap.parse_args()
    a.precision = a.precision or ("f16" if a.device.startswith("cuda") else "f32")
    r = dict(RECIPES[a.recipe])
    iters = a.iters or r["iters"]
    every, n_eval = a.eval_every or r["eval_every"], a.eval_iters or r["eval_iters"]
    torch.manual_seed(a.seed)
    text = open(a.data, encoding="utf-8").read()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    ids = torch.tensor([stoi[c] for c in text])
    n = int(len(ids) * 0.9)
    splits = {"train": ids[:n], "val": ids[n:]}
    dev = torch.device(a.device)
    model = GPT(r, len(chars)).to(dev)
    fwd = torch.compile(model) if a.compile else model
    decay = [p for p in model.parameters() if p.dim() >= 2]
    other = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": DECAY}, {"params": other, "weight_decay": 0.0}],
                            lr=LR, betas=BETAS)
    amp = {"f16": torch.float16, "bf16": torch.bfloat16}.get(a.precision)
    scaler = torch.cuda.amp.GradScaler(enabled=a.precision == "f16" and dev.type == "cuda")

    def batch(split):
        data = splits[split]
        o = torch.randint(len(data) - r["block"], (r["batch"],))
        x = torch.stack([data[i:i + r["block"]] for i in o])
        y = torch.stack([data[i + 1:i + 1 + r["block"]] for i in o])
        return x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)

    def autocast():
        return torch.autocast(dev.type, dtype=amp) if amp else contextlib.nullcontext()

    @torch.no_grad()
    def evaluate():
        model.eval()
        out = []
        for split in ("train", "val"):
            total = 0.0
            for _ in range(n_eval):
                with autocast():
                    total += fwd(*batch(split)).item()
            out.append(total / n_eval)
        model.train()
        return out

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    since, train_time, start = 0, 0.0, time.perf_counter()
    for it in range(iters + 1):
        if it % every == 0 or it == iters:
            sync()
            train_time += time.perf_counter() - start
            tl, vl = evaluate()
            done = it - since
            print(json.dumps({"iter": it, "train_loss": tl, "val_loss": vl,
                              "tokens_per_s": r["batch"] * r["block"] * done / train_time if done else 0,
                              "scale": scaler.get_scale() if scaler.is_enabled() else 1,
                              "ms_per_iter": 1e3 * train_time / done if done else 0,
                              "lr": lr_at(min(it, iters - 1), iters), "device": str(dev), "torch": torch.__version__}),
                  flush=True)
            since, train_time = it, 0.0
            sync()
            start = time.perf_counter()
        if it == iters:
            break
        for g in opt.param_groups:
            g["lr"] = lr_at(it, iters)
        x, y = batch("train")
        with autocast():
            loss = fwd(x, y)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)


if __name__ == "__main__":
    main()
