#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, after prepare.sh ran
# here: nanoGPT's shakespeare_char GPU recipe (6 layers, 384 dims, context
# 256, batch 64) in vkamp (tools/gpt, fp16 AMP) and in PyTorch
# (torch_gpt.py, the same model and loop with torch.amp), each printing one
# JSON line per evaluation under $OUT: val loss and tokens/s side by side.
# ITERS shortens both runs (the schedule decays over them); the default is
# the recipe's 5,000 iterations. LIMIT bounds each run, in seconds.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/gpucheck}
ITERS=${ITERS:-5000}
LIMIT=${LIMIT:-240}
mkdir -p "$OUT"
. tools/gpucheck/setup.sh
summary=$OUT/gpt-summary.txt
: > "$summary"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c 'import torch; print("torch", torch.__version__)'; } >> "$summary" 2>&1
timeout "$LIMIT" $bin/gpt -recipe gpu -iters "$ITERS" -json > "$OUT/gpt-vkamp.json" 2>> "$summary"
echo "== vkamp rc=$? $(tail -n 1 "$OUT/gpt-vkamp.json")" >> "$summary"
timeout "$LIMIT" python3 tools/gpucheck/torch_gpt.py -recipe gpu -iters "$ITERS" > "$OUT/gpt-torch.json" 2>> "$summary"
echo "== torch rc=$? $(tail -n 1 "$OUT/gpt-torch.json")" >> "$summary"
