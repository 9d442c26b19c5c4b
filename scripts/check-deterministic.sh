#!/usr/bin/env bash
# Train the MNIST MLP for one epoch in vkamp's deterministic mode on every
# driver and tier at hand and compare the sha256 of the model.safetensors
# each run leaves: they must be the same bytes, per precision.
#
# Usage: scripts/check-deterministic.sh [-precision ...]   (default: f16 and f32)
# Environment: SWIFTSHADER (ICD JSON; default /opt/vkamp/swiftshader/vk_swiftshader_icd.json),
# LAVAPIPE (ICD JSON; default the first lvp_icd.*.json), EPOCHS (default 1),
# DETERMINISTIC (default 1: set 0 to see how the default mode differs).
set -euo pipefail
cd "$(dirname "$0")/.."

precisions=("$@")
[ ${#precisions[@]} -gt 0 ] || precisions=(f16 f32)
SWIFTSHADER=${SWIFTSHADER:-/opt/vkamp/swiftshader/vk_swiftshader_icd.json}
LAVAPIPE=${LAVAPIPE:-$(ls /usr/share/vulkan/icd.d/lvp_icd.*.json 2>/dev/null | head -n 1)}
EPOCHS=${EPOCHS:-1}
DETERMINISTIC=${DETERMINISTIC:-1}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/train" ./tools/train

# name  ICD  VKAMP_TIER
configs=()
[ -n "$LAVAPIPE" ] && configs+=("lavapipe $LAVAPIPE -" "lavapipe-storage16 $LAVAPIPE storage16" "lavapipe-packed $LAVAPIPE packed")
[ -f "$SWIFTSHADER" ] && configs+=("swiftshader $SWIFTSHADER -")
[ ${#configs[@]} -gt 0 ] || { echo "no Vulkan driver found" >&2; exit 1; }
[ -f "$SWIFTSHADER" ] || echo "warning: no SwiftShader at $SWIFTSHADER (scripts/install-swiftshader.sh)" >&2

fail=0
for p in "${precisions[@]}"; do
	ref=""
	for c in "${configs[@]}"; do
		read -r name icd tier <<<"$c"
		[ "$tier" = - ] && tier=""
		dir="$work/$p-$name"
		env VK_ICD_FILENAMES="$icd" VK_DRIVER_FILES="$icd" VKAMP_TIER="$tier" VKAMP_DETERMINISTIC="$DETERMINISTIC" \
			"$work/train" -epochs "$EPOCHS" -precision "$p" -checkpoint "$dir" -json >"$dir.log" 2>&1 ||
			{ echo "$p $name: training failed:"; tail -n 20 "$dir.log"; fail=1; continue; }
		sum=$(sha256sum "$dir/$(head -n 1 "$dir/LATEST")/model.safetensors" | cut -d' ' -f1)
		printf '%-4s %-20s %s  %s\n' "$p" "$name" "$sum" "$(tail -n 1 "$dir.log")"
		if [ -z "$ref" ]; then
			ref=$sum
		elif [ "$sum" != "$ref" ]; then
			fail=1
		fi
	done
done
if [ $fail -ne 0 ]; then
	echo "FAIL: the runs differ"
	exit 1
fi
echo "ok: every driver and tier left the same model.safetensors"
