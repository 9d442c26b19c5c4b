#!/usr/bin/env bash
# dev.sh: set up a Debian or Ubuntu machine for vkamp and run it.
#
#   ./dev.sh demo [flags]  install what is missing, then train MNIST with fp16 AMP on the best
#                          device and write report.png (flags go to tools/train)
#   ./dev.sh gpt [flags]   install what is missing, then train a character-level GPT on Tiny
#                          Shakespeare with nanoGPT's CPU recipe in fp16 AMP, write gpt.png and
#                          print a sample (flags go to tools/gpt: -recipe gpu, -precision f32...)
#   ./dev.sh test [args]   install what is missing, then run the tests (go test ./... args)
#   ./dev.sh test-mpi      install Open MPI as well, then run the data-parallel tests under
#                          mpirun (the MNIST MLP and a tiny GPT against one device): 2 ranks on
#                          one driver, 2 on mixed drivers (MIXED=1, needs SwiftShader), a hung
#                          rank that must end in an error, not a hang, and a rank killed
#                          mid-training whose job must end and resume from its checkpoint
#   ./dev.sh setup         only install what is missing
#   ./dev.sh swiftshader   install Google's SwiftShader Vulkan driver (for CI-like runs)
#
# GPU users need their vendor's Vulkan driver; the Mesa packages installed here
# add lavapipe, a software Vulkan device used when no GPU is present.
set -euo pipefail
cd "$(dirname "$0")"

# Packages vkamp needs to build (cgo and the Vulkan headers) and to run (the
# loader and a software driver).
PACKAGES=(gcc libc6-dev libvulkan1 libvulkan-dev mesa-vulkan-drivers)

as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# install_missing installs those of the given Debian packages that are absent.
install_missing() {
	local missing=()
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if ! command -v apt-get >/dev/null; then
		echo "dev.sh: please install: ${missing[*]} (no apt-get here)" >&2
		return 1
	fi
	echo "dev.sh: installing ${missing[*]}" >&2
	as_root apt-get update -qq
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

setup() {
	if ! command -v go >/dev/null; then
		echo "dev.sh: Go 1.26 or newer is needed: https://go.dev/dl/" >&2
		exit 1
	fi
	if command -v dpkg-query >/dev/null; then install_missing "${PACKAGES[@]}"; fi
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
setup) setup ;;
demo)
	setup
	go run ./tools/train -report report.png "$@"
	;;
gpt)
	setup
	go run ./tools/gpt -recipe cpu -report gpt.png -sample 500 "$@"
	;;
test)
	setup
	go test "$@" ./...
	;;
test-mpi)
	setup
	if command -v dpkg-query >/dev/null; then install_missing openmpi-bin libopenmpi-dev; fi
	MIXED= scripts/test-mpi.sh
	[ "${MIXED:-}" = 1 ] && MIXED=1 scripts/test-mpi.sh
	scripts/test-mpi.sh fault
	scripts/test-mpi.sh kill
	;;
swiftshader) scripts/install-swiftshader.sh "$@" ;;
*)
	sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
	;;
esac
