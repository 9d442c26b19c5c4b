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
# scripts/test-mpi.sh kill: tools/train (the MLP, a checkpoint every 20
# steps) under mpirun; once the first checkpoint is written the last rank
# is killed with SIGKILL. Passes when the job ends (mpirun reports the
# killed rank and ends the others), when under mpirun --enable-recovery
# the others end on their own with dist's error (its timeout), and when a
# single process then resumes from the last checkpoint, written by NP
# ranks, and ends training with a sensible loss and accuracy.
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
	# Each rank writes its pid, then becomes tools/train (same pid).
	printf '#!/bin/sh\necho $$ >"$TEST_MPI_PIDS/pid.$OMPI_COMM_WORLD_RANK"\nexec "$@"\n' >"$tmp/rank.sh"
	chmod +x "$tmp/rank.sh"
	# killjob NAME MPIRUN_FLAGS TRAIN_FLAGS trains 3 epochs of 125 steps,
	# a checkpoint every 20, in $tmp/NAME; once the first checkpoint is
	# written (long before the end) it kills the last rank and waits for
	# the job, whose exit status it leaves in rc and output in
	# $tmp/NAME.log. mpirun's --timeout only ends a hung job.
	killjob() {
		rm -f "$tmp"/pid.*
		mpirun $root --oversubscribe --timeout 900 $2 -x TEST_MPI_PIDS="$tmp" -np "$np" "$tmp/rank.sh" \
			"$tmp/train" -epochs 3 -checkpoint "$tmp/$1" -checkpoint-every 20 -log-every 10 $3 >"$tmp/$1.log" 2>&1 &
		job=$!
		waited=0
		until [ -f "$tmp/$1/LATEST" ]; do # rank 0 writes it atomically
			kill -0 "$job" 2>/dev/null || { cat "$tmp/$1.log"; fail "$1: the job ended before its first checkpoint"; }
			[ "$waited" -lt 900 ] || { kill "$job"; fail "$1: no checkpoint after ${waited}s"; }
			sleep 1
			waited=$((waited + 1))
		done
		victim=$(cat "$tmp/pid.$((np - 1))")
		kill -9 "$victim" || fail "$1: rank $((np - 1)) (pid $victim) was not running when the first checkpoint appeared"
		echo "kill test, $1: killed rank $((np - 1)) (pid $victim) with SIGKILL after $(head -1 "$tmp/$1/LATEST") appeared (${waited}s)"
		start=$(date +%s)
		rc=0
		wait "$job" || rc=$?
		tr '\r' '\n' <"$tmp/$1.log"
		echo "kill test, $1: mpirun exited with status $rc $(($(date +%s) - start))s after the kill"
		! grep -q "time limit" "$tmp/$1.log" || fail "$1: the job hung until mpirun's --timeout"
	}

	# mpirun ends the others as soon as it sees the killed rank; should one
	# see the death first, it must fail with dist's error.
	killjob ends "" ""
	[ "$rc" -ne 0 ] || fail "ends: mpirun exited 0 after a rank was killed"
	grep -q "process rank $((np - 1)) .* exited on signal 9" "$tmp/ends.log" || grep -q "train: .*dist: " "$tmp/ends.log" ||
		fail "ends: neither mpirun reported rank $((np - 1)) killed by signal 9 nor another rank failed with dist's error"

	# With --enable-recovery mpirun lets the others run: they wait in a
	# collective for the dead rank until the group's timeout (a minute: far
	# above a step of the MLP) or an error from MPI, then fail with dist's
	# error and exit.
	killjob recovery --enable-recovery "-collective-timeout 60s"
	grep -Eq "train: .*dist: (collective timed out|the group is broken)" "$tmp/recovery.log" ||
		fail "recovery: rank 0 did not fail with dist's error"

	echo "kill test: resuming from $(head -1 "$tmp/ends/LATEST") in a single process"
	"$tmp/train" -epochs 3 -checkpoint "$tmp/ends" -resume -json >"$tmp/resume.json" 2>"$tmp/resume.log" ||
		{ tr '\r' '\n' <"$tmp/resume.log"; fail "the resumed run failed"; }
	tr '\r' '\n' <"$tmp/resume.log"
	cat "$tmp/resume.json"
	grep -q "resumed from $tmp/ends at epoch" "$tmp/resume.log" || fail "the run did not say it resumed"
	# The last epoch's line: the MLP reaches about 0.23 and 93.6% on these
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
