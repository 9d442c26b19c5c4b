#!/usr/bin/env bash
# Prepares a real-GPU check on a machine without Go or a package registry
# (the workplace's H200 machine): builds the test binaries and tools here,
# compressed into .devbin/, and fetches the Vulkan loader's and libglvnd's
# .debs into .gl/ (the NVIDIA ICD, libGLX_nvidia, needs libglvnd).
# Both folders are git-ignored (.git/info/exclude) and travel with `carry`.
# Then run tools/gpucheck/run.sh there (the tests, matmul and the MLP
# against PyTorch), and tools/gpucheck/gpt.sh (the transformer).
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qx '/.devbin/' .git/info/exclude || echo /.devbin/ >> .git/info/exclude
grep -qx '/.gl/' .git/info/exclude || echo /.gl/ >> .git/info/exclude
rm -rf .devbin && mkdir -p .devbin
PKGS=(vk tensor/internal/kernels tensor scaler nn tools/internal/trainer checkpoint tools/train)
for p in "${PKGS[@]}"; do
	name=$(echo "$p" | tr / _)
	go test -c -ldflags='-s -w' -o ".devbin/$name.test" "./$p"
done
for t in vkinfo bench train gpt; do
	go build -ldflags='-s -w' -o ".devbin/$t" "./tools/$t"
done
gzip -9 .devbin/*
if ! ls .gl/libvulkan1_*.deb .gl/libglvnd0_*.deb >/dev/null 2>&1; then
	mkdir -p .gl /tmp/amd64/partial
	o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
	apt-get $o update -qq
	(cd .gl && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
fi
du -sh .devbin .gl
