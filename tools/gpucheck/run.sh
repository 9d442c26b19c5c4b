#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, after prepare.sh ran
# here: unpacks the Vulkan loader, finds the NVIDIA driver, then runs vkinfo,
# the test binaries, tools/bench and the PyTorch reference, writing what they
# print under $OUT (at most a few files, as the device tool returns them).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/gpucheck}
mkdir -p "$OUT"
. tools/gpucheck/setup.sh
summary=$OUT/summary.txt
: > "$summary"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; } >> "$summary" 2>&1
$bin/vkinfo -json > "$OUT/vkinfo.json" 2>&1
$bin/vkinfo >> "$summary" 2>&1
for t in $bin/*.test; do
	name=$(basename "$t" .test)
	dir=$(echo "$name" | tr _ /)
	[ -d "$dir" ] || dir=$(echo "$name" | sed 's/_/\//')
	for tier in "" packed; do
		start=$(date +%s)
		(cd "$dir" && VKAMP_TIER=$tier timeout 240 "$t" -test.count=1 -test.timeout 230s) > "$OUT/last.log" 2>&1
		rc=$?
		echo "== $name tier=${tier:-best} rc=$rc $(( $(date +%s) - start ))s" >> "$summary"
		grep -E '^(--- FAIL|FAIL|panic|ok|PASS)' "$OUT/last.log" | head -20 >> "$summary"
		{ echo "== $name tier=${tier:-best}"; cat "$OUT/last.log"; } >> "$OUT/tests.log"
		[ "$name" = tools_train ] || [ "$name" = checkpoint ] && break # no tier-specific kernels
	done
done
# matmul_coop (cooperative matrices) verbosely: the plan, the checks and
# TFLOP/s per tile beside the shared-memory kernel. Its tests skip, saying
# why, on a device without VK_KHR_cooperative_matrix.
(cd tensor && timeout 240 $bin/tensor.test -test.run 'Coop' -test.v -test.count=1 -test.timeout 230s) > "$OUT/last.log" 2>&1
echo "== tensor coop rc=$?" >> "$summary"
grep -E 'TFLOP/s|plan:|feature not available|not wired|^\s*--- (FAIL|SKIP)|^(FAIL|ok|PASS)' "$OUT/last.log" | head -40 >> "$summary"
{ echo "== tensor coop -test.v"; cat "$OUT/last.log"; } >> "$OUT/tests.log"
rm -f "$OUT/last.log"
$bin/bench -json -sizes 256,1024,2048,4096 -data testdata/mnist > "$OUT/bench.json" 2>> "$summary"
echo "== bench rc=$?" >> "$summary"
python3 tools/gpucheck/torch_ref.py > "$OUT/torch.json" 2>> "$summary"
echo "== torch rc=$?" >> "$summary"
