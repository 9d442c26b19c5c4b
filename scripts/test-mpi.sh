#!/bin/sh
# Runs dist's MPI test under mpirun: NP ranks (default 2) on one host, one
# Vulkan device a process. MIXED=1 runs rank 0 on SwiftShader (SWIFTSHADER_ICD,
# default /opt/vkamp/swiftshader/vk_swiftshader_icd.json) and the others on
# the default driver. Needs openmpi-bin and libopenmpi-dev.
set -eu
cd "$(dirname "$0")/.."
np=${NP:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -tags mpi -c -o "$tmp/dist.test" ./dist
root=
[ "$(id -u)" = 0 ] && root=--allow-run-as-root
args="-test.run TestMPI -test.count=1 -test.v"
cd dist # the test binary reads ../testdata, as go test runs it
if [ "${MIXED:-}" = 1 ]; then
	icd=${SWIFTSHADER_ICD:-/opt/vkamp/swiftshader/vk_swiftshader_icd.json}
	exec mpirun $root --oversubscribe --timeout 900 \
		-np 1 -x VK_ICD_FILENAMES="$icd" -x VK_DRIVER_FILES="$icd" "$tmp/dist.test" $args : \
		-np $((np - 1)) "$tmp/dist.test" $args
fi
mpirun $root --oversubscribe --timeout 900 -np "$np" "$tmp/dist.test" $args
