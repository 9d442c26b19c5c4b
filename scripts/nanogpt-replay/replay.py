"""Trains nanoGPT's own model.py with its train.py loop for the CPU recipe
(AdamW from configure_optimizers, get_lr's warm-up and cosine decay,
clipping at 1.0, estimate_loss over 20 batches a split, fp32 as nanoGPT runs
on a CPU), started from the weights and fed the batch windows that
`go run ./scripts/nanogpt-replay` wrote for a tools/gpt seed. Prints one
JSON line per evaluation, as `tools/gpt -json` does.

    python3 scripts/nanogpt-replay/replay.py -nanogpt DIR PREFIX

DIR is a checkout of github.com/karpathy/nanoGPT.
"""
import argparse
import json
import math
import sys
import time

import numpy as np
import torch

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("-nanogpt", required=True, help="a nanoGPT checkout (its model.py is used)")
ap.add_argument("-data", default="testdata/tinyshakespeare/input.txt")
ap.add_argument("prefix", help="the -out of scripts/nanogpt-replay")
a = ap.parse_args()
sys.path.insert(0, a.nanogpt)
from model import GPT, GPTConfig  # noqa: E402

BLOCK, BATCH, ITERS, EVAL_EVERY, EVAL_ITERS = 64, 12, 2000, 250, 20
torch.set_num_threads(1)  # the order of CPU sums fixed, whatever the machine
text = open(a.data, encoding="utf-8").read()
stoi = {c: i for i, c in enumerate(sorted(set(text)))}
ids = np.array([stoi[c] for c in text], dtype=np.int64)
n = int(len(ids) * 0.9)
data = {"train": ids[:n], "val": ids[n:]}
names = json.load(open(a.prefix + ".json"))
values = np.fromfile(a.prefix + ".f32", dtype="<f4")
offs = np.fromfile(a.prefix + ".offs", dtype="<i8")

model = GPT(GPTConfig(block_size=BLOCK, vocab_size=len(stoi), n_layer=4, n_head=4, n_embd=128, dropout=0.0, bias=False))
state = model.state_dict()
pos = 0
with torch.no_grad():
    for e in names:
        size = int(np.prod(e["shape"]))
        state["transformer." + e["name"]].copy_(torch.from_numpy(values[pos:pos + size].reshape(e["shape"]).copy()))
        pos += size
assert pos == values.size, "the weights do not fill the model"
assert torch.equal(model.lm_head.weight, model.transformer.wte.weight), "the head is not tied"

taken = 0


def get_batch(split):
    global taken
    o = offs[taken:taken + BATCH]
    taken += BATCH
    x = torch.from_numpy(np.stack([data[split][i:i + BLOCK] for i in o]))
    y = torch.from_numpy(np.stack([data[split][i + 1:i + 1 + BLOCK] for i in o]))
    return x, y


@torch.no_grad()
def estimate_loss():
    model.eval()
    out = {s: sum(model(*get_batch(s))[1].item() for _ in range(EVAL_ITERS)) / EVAL_ITERS for s in ("train", "val")}
    model.train()
    return out


def get_lr(it, lr=1e-3, min_lr=1e-4, warmup=100, decay_iters=ITERS):  # train.py's
    if it < warmup:
        return lr * (it + 1) / (warmup + 1)
    if it > decay_iters:
        return min_lr
    coeff = 0.5 * (1.0 + math.cos(math.pi * (it - warmup) / (decay_iters - warmup)))
    return min_lr + coeff * (lr - min_lr)


optimizer = model.configure_optimizers(0.1, 1e-3, (0.9, 0.99), "cpu")
start = time.time()
for it in range(ITERS + 1):
    lr = get_lr(it)
    for g in optimizer.param_groups:
        g["lr"] = lr
    if it % EVAL_EVERY == 0 or it == ITERS:
        l = estimate_loss()
        print(json.dumps({"iter": it, "train_loss": l["train"], "val_loss": l["val"], "lr": lr,
                          "elapsed_s": time.time() - start}), flush=True)
    if it == ITERS:
        break
    _, loss = model(*get_batch("train"))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
assert taken == offs.size, "the windows written and read differ"
