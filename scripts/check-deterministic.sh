#!/usr/bin/env bash
# Train models in vkamp's deterministic mode on every driver and tier at
# hand and compare the sha256 of the model.safetensors each run leaves, and
# the losses it reports: they must be the same bytes, per model and
# precision. The models:
#   mlp  the MNIST MLP, EPOCHS epochs of tools/train over the first
#        MLP_SAMPLES training digits (by default 32 steps of 64: one
#        recorded, one captured, 30 replayed) and the first 512 test digits;
#   cnn  the MNIST CNN (convolutions, max-pooling, dropout, Adadelta), one
#        epoch of tools/train over the first CNN_SAMPLES training digits
#        (one step of 64) and the first 64 test digits;
#   gpt  tools/gpt's tiny recipe (2 layers, 30 iterations, dropout 0.1:
#        attention composed from graph ops in training, the fused kernels in
#        the evaluations), and with GPT_FUSED=1 (the default) again without
#        dropout, where training runs the fused attention kernels.
#
# Usage: scripts/check-deterministic.sh [-precision ...]   (default: f16 and f32)
# Environment: SWIFTSHADER (ICD JSON; default /opt/vkamp/swiftshader/vk_swiftshader_icd.json),
# LAVAPIPE (ICD JSON; default the first lvp_icd.*.json), LAVAPIPE_CURRENT (the run
# wrapper of scripts/install-lavapipe-current.sh: Mesa 26's lavapipe too; default
# none), MODELS (default "mlp cnn gpt"),
# EPOCHS (mlp, default 1), MLP_SAMPLES (default 2048; 0: all), CNN_SAMPLES
# (default 64), GPT_FUSED (default 1),
# DETERMINISTIC (default 1: set 0 to see how the default mode differs).
set -euo pipefail
cd "$(dirname "$0")/.."

precisions=("$@")
[ ${#precisions[@]} -gt 0 ] || precisions=(f16 f32)
SWIFTSHADER=${SWIFTSHADER:-/opt/vkamp/swiftshader/vk_swiftshader_icd.json}
LAVAPIPE=${LAVAPIPE:-$(ls /usr/share/vulkan/icd.d/lvp_icd.*.json 2>/dev/null | head -n 1)}
MODELS=${MODELS:-mlp cnn gpt}
EPOCHS=${EPOCHS:-1}
# Short runs: on SwiftShader the deterministic matmul (matmul_reg) is slow,
# and a full MLP epoch took 2 minutes, a CNN step 50 seconds.
MLP_SAMPLES=${MLP_SAMPLES:-2048}
CNN_SAMPLES=${CNN_SAMPLES:-64}
GPT_FUSED=${GPT_FUSED:-1}
DETERMINISTIC=${DETERMINISTIC:-1}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/train" ./tools/train
go build -o "$work/gpt" ./tools/gpt

# name  ICD  VKAMP_TIER  wrapper (- for none: the wrapper sets its own ICD)
configs=()
[ -n "$LAVAPIPE" ] && configs+=("lavapipe $LAVAPIPE - -" "lavapipe-storage16 $LAVAPIPE storage16 -" "lavapipe-packed $LAVAPIPE packed -")
[ -n "${LAVAPIPE_CURRENT:-}" ] && configs+=("lavapipe-mesa26 - - $LAVAPIPE_CURRENT")
[ -f "$SWIFTSHADER" ] && configs+=("swiftshader $SWIFTSHADER - -")
[ ${#configs[@]} -gt 0 ] || { echo "no Vulkan driver found" >&2; exit 1; }
[ -f "$SWIFTSHADER" ] || echo "warning: no SwiftShader at $SWIFTSHADER (scripts/install-swiftshader.sh)" >&2

# runs: name and command of each model run (the checkpoint flag is added).
runs=()
for m in $MODELS; do
	case $m in
	mlp) runs+=("mlp|$work/train -epochs $EPOCHS -train-samples $MLP_SAMPLES -test-samples 512 -json") ;;
	cnn) runs+=("cnn|$work/train -model cnn -epochs 1 -train-samples $CNN_SAMPLES -test-samples 64 -json") ;;
	gpt)
		runs+=("gpt|$work/gpt -recipe tiny -json")
		[ "$GPT_FUSED" = 1 ] && runs+=("gpt-fused|$work/gpt -recipe tiny -dropout 0 -json")
		;;
	*) echo "unknown model $m in MODELS: use mlp, cnn, gpt" >&2; exit 2 ;;
	esac
done

fail=0
differ=()
start=$SECONDS
for r in "${runs[@]}"; do
	model=${r%%|*}
	cmd=${r#*|}
	for p in "${precisions[@]}"; do
		ref=""
		for c in "${configs[@]}"; do
			read -r name icd tier wrap <<<"$c"
			[ "$tier" = - ] && tier=""
			[ "$wrap" = - ] && wrap=""
			dir="$work/$model-$p-$name"
			t0=$SECONDS
			# shellcheck disable=SC2086 # cmd is words
			env VK_ICD_FILENAMES="$icd" VK_DRIVER_FILES="$icd" VKAMP_TIER="$tier" VKAMP_DETERMINISTIC="$DETERMINISTIC" \
				$wrap $cmd -precision "$p" -checkpoint "$dir" >"$dir.log" 2>"$dir.err" ||
				{ echo "$model $p $name: training failed:"; tail -n 20 "$dir.err"; fail=1; continue; }
			sum=$(sha256sum "$dir/$(head -n 1 "$dir/LATEST")/model.safetensors" | cut -d' ' -f1)
			# The losses (and accuracy) of the last report, not its speeds.
			losses=$(tail -n 1 "$dir.log" | grep -o '"\(train_loss\|val_loss\|test_accuracy\)":[^,}]*' | tr '\n' ' ')
			printf '%-9s %-4s %-20s %s  %s(%ds)\n' "$model" "$p" "$name" "$sum" "$losses" $((SECONDS - t0))
			if [ -z "$ref" ]; then
				ref="$sum $losses"
			elif [ "$sum $losses" != "$ref" ]; then
				fail=1
				differ+=("$model $p $name")
			fi
		done
	done
done
echo "wall time: $((SECONDS - start)) s"
if [ $fail -ne 0 ]; then
	[ ${#differ[@]} -gt 0 ] && printf 'differs from the first driver: %s\n' "${differ[@]}"
	echo "FAIL: the runs differ"
	exit 1
fi
echo "ok: every driver and tier left the same model.safetensors and losses"
