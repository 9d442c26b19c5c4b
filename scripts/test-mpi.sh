#!/bin/sh
# Runs the data-parallel tests under mpirun: NP ranks (default 2) on one
# host, one Vulkan device a process. Needs openmpi-bin and libopenmpi-dev.
#
# scripts/test-mpi.sh: dist's TestMPI (the MNIST MLP against one device, a
# planted inf) and tools/gpt's TestMPIGPT (the tiny GPT against one device,
# fp32 and fp16 AMP). MIXED=1 runs rank 0 on SwiftShader (SWIFTSHADER_ICD,
# default /opt/vkamp/swiftshader/vk_swiftshader_icd.json) and the others on
# the default driver.
#
# scripts/test-mpi.sh fault: the last rank hangs and exits without a word;
# passes when rank 0 reports the timeout (ErrTimeout) instead of hanging.
#
# scripts/test-mpi.sh kill: tools/train (the MLP, checkpoints every 20
# steps) under mpirun; once the first checkpoint is written the last rank
# is killed with SIGKILL. Passes when the job ends (mpirun reports the
# killed rank and ends the others), then a single process resumes from the
# last checkpoint, written by NP ranks, and ends training with a sensible
# loss and accuracy. (Not under mpirun --enable-recovery: there Open MPI 4.1
# lets the survivors' collectives complete without the dead rank for a
# while (observed), so they train and checkpoint on until one times out.)
set -eu
cd "$(dirname "$0")/.."
np=${NP:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
root=
[ "$(id -u)" = 0 ] && root=--allow-run-as-root

if [ "${1:-}" = fault ]; then
	go test -tags mpi -c -o "$tmp/dist.test" ./dist
	cd dist # the test binary reads ../testdata, as go test runs it
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

if [ "${1:-}" = kill ]; then
	fail() {
		echo "kill test: FAILED: $*" >&2
		exit 1
	}
	go build -tags mpi -o "$tmp/train" ./tools/train
	ck=$tmp/checkpoint
	# Each rank writes its pid, then becomes tools/train (same pid).
	printf '#!/bin/sh\necho $$ >"$TEST_MPI_PIDS/pid.$OMPI_COMM_WORLD_RANK"\nexec "$@"\n' >"$tmp/rank.sh"
	chmod +x "$tmp/rank.sh"
	# 3 epochs of 125 steps: the kill comes long before the end. mpirun's
	# --timeout only ends a hung job (and the test then fails).
	mpirun $root --oversubscribe --timeout 900 -x TEST_MPI_PIDS="$tmp" -np "$np" "$tmp/rank.sh" \
		"$tmp/train" -epochs 3 -checkpoint "$ck" -checkpoint-every 20 -log-every 10 >"$tmp/job.log" 2>&1 &
	job=$!
	waited=0
	until [ -f "$ck/LATEST" ]; do # rank 0 writes it atomically
		kill -0 "$job" 2>/dev/null || { cat "$tmp/job.log"; fail "the job ended before its first checkpoint"; }
		[ "$waited" -lt 900 ] || { kill "$job"; fail "no checkpoint after ${waited}s"; }
		sleep 1
		waited=$((waited + 1))
	done
	victim=$(cat "$tmp/pid.$((np - 1))")
	kill -9 "$victim" || fail "rank $((np - 1)) (pid $victim) was not running when the first checkpoint appeared"
	echo "kill test: killed rank $((np - 1)) (pid $victim) with SIGKILL after $(cat "$ck/LATEST" | head -1) appeared (${waited}s)"
	start=$(date +%s)
	rc=0
	wait "$job" || rc=$?
	tr '\r' '\n' <"$tmp/job.log"
	echo "kill test: mpirun exited with status $rc $(($(date +%s) - start))s after the kill"
	[ "$rc" -ne 0 ] || fail "mpirun exited 0 after a rank was killed"
	! grep -q "time limit" "$tmp/job.log" || fail "the job hung until mpirun's --timeout"
	# mpirun ends the others as soon as it sees the killed rank; should one
	# see the death first, it must fail with dist's error.
	grep -q "process rank $((np - 1)) .* exited on signal 9" "$tmp/job.log" || grep -q "^train: .*dist: " "$tmp/job.log" ||
		fail "neither mpirun reported rank $((np - 1)) killed by signal 9 nor another rank failed with dist's error"
	last=$(head -1 "$ck/LATEST")
	echo "kill test: resuming from $last in a single process"
	"$tmp/train" -epochs 3 -checkpoint "$ck" -resume -json >"$tmp/resume.json" 2>"$tmp/resume.log" ||
		{ tr '\r' '\n' <"$tmp/resume.log"; fail "the resumed run failed"; }
	tr '\r' '\n' <"$tmp/resume.log"
	cat "$tmp/resume.json"
	grep -q "resumed from $ck at epoch" "$tmp/resume.log" || fail "the run did not say it resumed"
	# The last epoch's line: the MLP reaches about 0.2 and 94% on these
	# 8,000 digits in 3 epochs; a run that lost its weights would not.
	tail -1 "$tmp/resume.json" | awk -F'[{:,}]' '
		{ for (i = 2; i < NF; i += 2) v[$i] = $(i + 1) }
		END {
			e = v["\"epoch\""]; l = v["\"train_loss\""]; a = v["\"test_accuracy\""]
			printf "kill test: the resumed run ended at epoch %s, train loss %s, test accuracy %s\n", e, l, a
			exit !(e + 0 == 3 && l ~ /^[0-9]/ && l + 0 < 0.5 && a + 0 > 0.85)
		}' || fail "the resumed run did not end at epoch 3 with train loss < 0.5 and test accuracy > 85%"
	echo "kill test: ok"
	exit 0
fi

# launch runs a test binary's tests matching $2 under mpirun.
launch() {
	if [ "${MIXED:-}" = 1 ]; then
		icd=${SWIFTSHADER_ICD:-/opt/vkamp/swiftshader/vk_swiftshader_icd.json}
		mpirun $root --oversubscribe --timeout 900 \
			-np 1 -x VK_ICD_FILENAMES="$icd" -x VK_DRIVER_FILES="$icd" "$1" -test.run "$2" -test.count=1 -test.v : \
			-np $((np - 1)) "$1" -test.run "$2" -test.count=1 -test.v
	else
		mpirun $root --oversubscribe --timeout 900 -np "$np" "$1" -test.run "$2" -test.count=1 -test.v
	fi
}
go test -tags mpi -c -o "$tmp/dist.test" ./dist
go test -tags mpi -c -o "$tmp/gpt.test" ./tools/gpt
# The test binaries read testdata as go test runs them, from their package.
(cd dist && launch "$tmp/dist.test" TestMPI)
(cd tools/gpt && launch "$tmp/gpt.test" TestMPIGPT)
