#!/usr/bin/env bash
# The GPU-class paths on an NVIDIA H100/H200, in at most 8 minutes, after
# prepare.sh ran here (it builds the test binaries and tools/bench, and
# fetches the Vulkan loader): vkinfo, the cooperative-matrix and bf16 tests
# verbosely (matmul_coop on every shape the device lists, matmul_coop_bf16
# where its cooperative matrices take bf16), then fp16 and bf16 4096^3 on
# every matmul path the device runs (tools/bench -paths, JSON) beside
# torch.matmul (cuBLAS) in the same run, under $OUT:
#   paths-vkinfo.json, paths-tests.log, paths-bench.json, paths-torch.json,
#   paths-summary.txt (what each step returned, the tests' verdicts, TFLOP/s)
#
#   device run: OUT=$OUT tools/gpucheck/paths.sh   (carry .devbin and .gl)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/gpucheck}
mkdir -p "$OUT"
. tools/gpucheck/setup.sh
summary=$OUT/paths-summary.txt
: > "$summary"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >> "$summary" 2>&1
timeout 30 $bin/vkinfo -json > "$OUT/paths-vkinfo.json" 2>&1
timeout 30 $bin/vkinfo | grep -E 'Device|driver|cooperative' >> "$summary" 2>&1
(cd tensor && timeout 200 $bin/tensor.test -test.run 'Coop|BF16' -test.v -test.count=1 -test.timeout 190s) > "$OUT/paths-tests.log" 2>&1
echo "== tensor Coop|BF16 rc=$?" >> "$summary"
(cd vk && timeout 60 $bin/vk.test -test.run 'Coop|SpecLimit' -test.v -test.count=1) >> "$OUT/paths-tests.log" 2>&1
echo "== vk Coop rc=$?" >> "$summary"
grep -E '^\s*--- (PASS|FAIL|SKIP)|plan:|TFLOP/s|^(ok|FAIL)' "$OUT/paths-tests.log" | head -60 >> "$summary"
timeout 150 $bin/bench -json -paths 4096 -sizes= -thin= -step= -conv=false -elements 0 -time 1s > "$OUT/paths-bench.json" 2>> "$summary"
echo "== bench rc=$?" >> "$summary"
timeout 60 python3 tools/gpucheck/torch_ref.py paths > "$OUT/paths-torch.json" 2>> "$summary"
echo "== torch rc=$?" >> "$summary"
python3 - "$OUT" >> "$summary" 2>&1 <<'PY'
import json, sys
out = sys.argv[1]
rows = []
for f in ("paths-bench.json", "paths-torch.json"):
    try:
        rows += [json.loads(l) for l in open(f"{out}/{f}") if l.startswith("{")]
    except OSError:
        pass
for r in rows:
    if "matmul" in r["name"]:
        print(f'{r["name"]:45s} {r["value"] / 1e3:8.1f} TFLOP/s  {r.get("detail", "")}')
PY
