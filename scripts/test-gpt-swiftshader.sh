#!/usr/bin/env bash
# Trains tools/gpt's CPU recipe (nanoGPT's shakespeare_char: 4 layers, 128
# dimensions, context 64, batch 12) in fp16 AMP on SwiftShader for ITERS
# iterations, evaluating at 0, ITERS/2 and ITERS on EVAL_ITERS batches per
# split, and fails unless every evaluation is a finite number and the final
# validation loss is at most MAX_VAL (at iteration 0 it is about 4.18, the
# log of the 65-character vocabulary). -iters also sets where the learning
# rate ends its decay, so this is a short schedule, not the first ITERS
# iterations of the full one.
#
# Usage: scripts/test-gpt-swiftshader.sh [tools/gpt flags...]
# Environment: SWIFTSHADER (ICD JSON; default
# /opt/vkamp/swiftshader/vk_swiftshader_icd.json), ITERS (default 200),
# EVAL_ITERS (default 4), MAX_VAL (default 2.8).
set -euo pipefail
cd "$(dirname "$0")/.."

SWIFTSHADER=${SWIFTSHADER:-/opt/vkamp/swiftshader/vk_swiftshader_icd.json}
ITERS=${ITERS:-200}
EVAL_ITERS=${EVAL_ITERS:-4}
MAX_VAL=${MAX_VAL:-2.8}
if [ ! -f "$SWIFTSHADER" ]; then
	echo "no SwiftShader at $SWIFTSHADER: sudo scripts/install-swiftshader.sh /opt/vkamp/swiftshader" >&2
	exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/gpt" ./tools/gpt

# The JSON lines go to a file as they come (a NaN loss prints as null,
# which the check below refuses); the progress lines go to stderr.
status=0
VK_ICD_FILENAMES="$SWIFTSHADER" VK_DRIVER_FILES="$SWIFTSHADER" "$work/gpt" -recipe cpu -precision f16 \
	-iters "$ITERS" -eval-every $((ITERS / 2)) -eval-iters "$EVAL_ITERS" -json "$@" | tee "$work/evals.jsonl" || status=$?
if [ "$status" != 0 ]; then
	echo "test-gpt-swiftshader: tools/gpt failed (exit status $status)" >&2
	exit 1
fi

# Each line must hold an iteration and finite train and validation losses;
# the first is iteration 0, the last ITERS.
awk -v iters="$ITERS" -v maxval="$MAX_VAL" '
function field(name,   m) {
	if (match($0, "\"" name "\":-?[0-9][0-9.eE+-]*")) {
		m = substr($0, RSTART, RLENGTH)
		sub(/^"[a-z_]+":/, "", m)
		return m
	}
	bad = bad "\n  line " NR " has no number for " name ": " $0
	return ""
}
{
	it = field("iter"); tr = field("train_loss"); va = field("val_loss")
	if (NR == 1) { first_iter = it; first_val = va }
	last_iter = it; last_val = va; last_train = tr
}
END {
	if (NR == 0) bad = bad "\n  no evaluations"
	if (bad == "" && first_iter != 0) bad = bad "\n  the first evaluation is iteration " first_iter ", not 0"
	if (bad == "" && last_iter != iters) bad = bad "\n  the last evaluation is iteration " last_iter ", not " iters
	if (bad == "" && !(last_val + 0 <= maxval + 0)) bad = bad "\n  the final val loss " last_val " is above " maxval " (iteration 0: " first_val ")"
	if (bad != "") { print "test-gpt-swiftshader: FAILED" bad > "/dev/stderr"; exit 1 }
	printf "test-gpt-swiftshader: ok: val loss %s at iteration 0, %s at %s (at most %s), train loss %s\n", first_val, last_val, last_iter, maxval, last_train
}' "$work/evals.jsonl"
