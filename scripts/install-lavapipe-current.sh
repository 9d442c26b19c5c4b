#!/usr/bin/env bash
# A current Mesa lavapipe (trixie-backports' Mesa 26, LLVM 19) beside Debian
# 12's own Mesa 22.3, without touching the system: the driver, trixie's
# Vulkan loader and validation layers and their libraries are unpacked into
# a cache directory, and programs run through trixie's dynamic loader. Mesa
# 26's lavapipe has VK_KHR_cooperative_matrix and VK_NV_cooperative_matrix2,
# so the GPU-class matmul paths run on it in CI.
#
# Usage: scripts/install-lavapipe-current.sh [DIR]
#   (default ${XDG_CACHE_HOME:-~/.cache}/vkamp/lavapipe-current/KEY, or under
#   VKAMP_CACHE; KEY hashes the package list, so a changed pin fetches anew)
# Prints the path of DIR/run: `DIR/run PROGRAM ARGS...` runs a program (a Go
# test binary: `go test -exec DIR/run`) on that lavapipe, with the validation
# layer of its own Vulkan version when VKAMP_VALIDATION is set. A program that
# starts itself again (a test's child process) finds how in LAVAPIPE_CURRENT_RUN.
set -euo pipefail
MESA=mesa-vulkan-drivers=26.1.6-1~bpo13+1@trixie-backports
# The validation layer of sid: trixie's (1.4.309) misreads cooperative
# matrices whose sides are specialization constants.
LAYERS=vulkan-validationlayers=1.4.363.0-1@sid
# The loader, and what the driver and LLVM link: trixie's.
DEPS=(libvulkan1 libc6 libstdc++6 libgcc-s1 libllvm19 libdisplay-info2
	libdrm-amdgpu1 libdrm2 libelf1t64 libexpat1 libpng16-16t64 libwayland-client0 libx11-xcb1
	libx11-6 libxau6 libxdmcp6 libbsd0 libmd0 libxcb-dri3-0 libxcb-present0 libxcb-randr0
	libxcb-shm0 libxcb-sync1 libxcb-xfixes0 libxcb1 libxshmfence1 libzstd1 zlib1g libedit2
	libffi8 libtinfo6 libxml2 liblzma5 libz3-4 libsensors5)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
. "$here/debcache.sh"

key=$(printf '%s\n' "$MESA" "$LAYERS" "${DEPS[@]}" | sha256sum | cut -c1-12)
dir=${1:-${VKAMP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vkamp}/lavapipe-current/$key}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd -P)
if [ ! -x "$dir/run" ]; then
	exec 9> "$dir.lock"
	flock 9
	if [ ! -x "$dir/run" ]; then
		echo "install-lavapipe-current: fetching Mesa lavapipe into $dir" >&2
		debcache_init "$dir"
		debcache_get "$dir" "$MESA" "$LAYERS" "${DEPS[@]/%/@trixie}"
		r=$dir/root
		so=$r/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so
		[ -f "$so" ] || { echo "install-lavapipe-current: no libvulkan_lvp.so in $MESA" >&2; exit 1; }
		sed -E "s|\"library_path\"[[:space:]]*:[[:space:]]*\"[^\"]*\"|\"library_path\": \"$so\"|" \
			"$r"/usr/share/vulkan/icd.d/lvp_icd*.json > "$dir/lvp_icd.json"
		grep -q "\"library_path\": \"$so\"" "$dir/lvp_icd.json"
		cat > "$dir/run.tmp" <<RUN
#!/bin/sh
# Runs a program on Mesa $(cat "$r/.got-mesa-vulkan-drivers")'s lavapipe through trixie's loader (scripts/install-lavapipe-current.sh).
loader="$(debcache_loader "$dir")"
libs="$(debcache_libpath "$dir")"
export VK_ICD_FILENAMES="$dir/lvp_icd.json" VK_DRIVER_FILES="$dir/lvp_icd.json"
export VK_LAYER_PATH="$r/usr/share/vulkan/explicit_layer.d" VK_ADD_LAYER_PATH=
export LAVAPIPE_CURRENT_RUN="$dir/run"
exec "\$loader" --library-path "\$libs" "\$@"
RUN
		chmod +x "$dir/run.tmp"
		mv -f "$dir/run.tmp" "$dir/run"
	fi
	exec 9>&-
fi
echo "$dir/run"
