#!/bin/sh
# Runs dist's MPI test under mpirun: NP ranks (default 2) on one host, one
# Vulkan device a process. MIXED=1 runs rank 0 on SwiftShader (SWIFTSHADER_ICD,
# default /opt/vkamp/swiftshader/vk_swiftshader_icd.json) and the others on
# the default driver. Needs openmpi-bin and libopenmpi-dev.
#
# scripts/test-mpi.sh fault: the last rank hangs and exits without a word;
# passes when rank 0 reports the timeout (ErrTimeout) instead of hanging.
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
if [ "${1:-}" = fault ]; then
	# mpirun fails the job (a rank exited without finalizing): the proof is
	# rank 0's log and that it ends.
	out=$(DIST_FAULT=1 mpirun $root --oversubscribe --timeout 120 -x DIST_FAULT -np "$np" \
		"$tmp/dist.test" -test.run TestMPIHungPeer -test.count=1 -test.v 2>&1) || true
	echo "$out"
	echo "$out" | grep -q "rank 0: dist: collective timed out" &&
		echo "$out" | grep -q -- "--- PASS: TestMPIHungPeer" &&
		! echo "$out" | grep -q -- "--- FAIL" && echo "fault test: ok" && exit 0
	echo "fault test: FAILED" >&2
	exit 1
fi
if [ "${MIXED:-}" = 1 ]; then
	icd=${SWIFTSHADER_ICD:-/opt/vkamp/swiftshader/vk_swiftshader_icd.json}
	exec mpirun $root --oversubscribe --timeout 900 \
		-np 1 -x VK_ICD_FILENAMES="$icd" -x VK_DRIVER_FILES="$icd" "$tmp/dist.test" $args : \
		-np $((np - 1)) "$tmp/dist.test" $args
fi
mpirun $root --oversubscribe --timeout 900 -np "$np" "$tmp/dist.test" $args
