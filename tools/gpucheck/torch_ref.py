"""PyTorch reference for tools/gpucheck: fp16 torch.matmul (cuBLAS) at the
sizes tools/bench uses, and the MNIST MLP's AMP training step, as JSON lines
comparable with tools/bench -json."""
import json
import sys
import time

import torch


def emit(name, value, unit, detail=""):
    print(json.dumps({"name": name, "value": value, "unit": unit, "detail": detail,
                      "device": torch.cuda.get_device_name(), "driver": "cuda " + torch.version.cuda}), flush=True)


def matmul(n, dtype):
    a = torch.randn(n, n, device="cuda", dtype=dtype)
    b = torch.randn(n, n, device="cuda", dtype=dtype)
    for _ in range(3):
        torch.matmul(a, b)
    reps = max(3, int(2e11 / (2 * n ** 3)))
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        torch.matmul(a, b)
    end.record()
    torch.cuda.synchronize()
    sec = start.elapsed_time(end) / 1e3
    return 2 * n ** 3 * reps / sec / 1e9


def mlp_step(amp, steps=300, batch=64):
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda", enabled=amp)
    x = torch.rand(steps, batch, 784, device="cuda")
    y = torch.randint(0, 10, (steps, batch), device="cuda")

    def run(n):
        for i in range(n):
            with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
                loss = torch.nn.functional.cross_entropy(model(x[i]), y[i])
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()

    run(20)
    torch.cuda.synchronize()
    t = time.perf_counter()
    run(steps)
    torch.cuda.synchronize()
    return steps * batch / (time.perf_counter() - t)


if sys.argv[1:2] == ["paths"]:  # paths.sh: the matmul paths' reference alone
    for dt, name in ((torch.float16, "float16"), (torch.bfloat16, "bfloat16")):
        emit(f"torch/matmul/{name}/4096", matmul(4096, dt), "GFLOP/s", f"cuBLAS {name} in and out")
    sys.exit(0)

for n in (256, 1024, 2048, 4096):
    emit(f"torch/matmul/float16/{n}", matmul(n, torch.float16), "GFLOP/s", "cuBLAS fp16 in and out")
    emit(f"torch/matmul/float32/{n}", matmul(n, torch.float32), "GFLOP/s", "cuBLAS fp32 (TF32 off by default)")
emit("torch/train-step/fp16-amp", mlp_step(True), "samples/s", "MLP 784-256-10, batch 64, Adam, GradScaler")
emit("torch/train-step/fp32", mlp_step(False), "samples/s", "MLP 784-256-10, batch 64, Adam")
