#!/usr/bin/env bash
# memsize: the functions' wall time with the CPU Lambda gives each memory
# size (1,769 MB is one vCPU), for `make memsize` (docs/benchmarks.md,
# "Memory size"). Needs root and the cgroup v1 cpu controller: each size
# is a CFS quota (cpu.cfs_quota_us / cpu.cfs_period_us = MB / 1769) on a
# cgroup of its own; only the function's process is put in it (a wrapper
# writes its pid to cgroup.procs, then execs the binary), never the
# driver, the embedded DynamoDB, the scripted model or the fake E2B.
#
#   the turn:  bench/cmd/benchdriver -ours-only (warm turns through the
#              API, CPU and wall per turn; cold starts under the emulator
#              and alone)
#   alarm, reaper: their RIE test (the bootstrap under the emulator, one
#              invocation: a cold start and one stream batch / one
#              sweep), timed whole; the test's own setup is the same at
#              every size, so the differences are the function's.
#   the turns users send: bench/cmd/turnshapes, the shapes of
#              bench/internal/shapes (an answer of 500 tokens streamed;
#              2k to 50k tokens of context; a code run; a web search),
#              the model paced as it streams, each turn watched by the
#              events function; the turn process and the events process
#              each in a cgroup of its own at the size. PASSES passes
#              over the sizes, interleaved, ROUNDS turns of each shape a
#              pass; then the events process's cold starts.
#
# A size of 0 is the reference: no quota (the machine's cores).
# Tunable: SIZES="0 128 256 384 512 1024" PARTS="turn shapes" RUNS=3 TURNS=100 WARMUP=20 COLD=5 REPEAT=5
#          PASSES=2 ROUNDS=2 TTFT=1s INTERVAL=12ms SHAPES=all (a comma-separated list of bench/internal/shapes)
set -euo pipefail
SIZES=${SIZES:-"0 128 256 384 512 1024"}
PARTS=${PARTS:-"turn shapes"}
RUNS=${RUNS:-3} TURNS=${TURNS:-100} WARMUP=${WARMUP:-20} COLD=${COLD:-5} REPEAT=${REPEAT:-5}
PASSES=${PASSES:-2} ROUNDS=${ROUNDS:-2} TTFT=${TTFT:-1s} INTERVAL=${INTERVAL:-12ms} SHAPES=${SHAPES:-all}
GO=${GO:-go}
GOBIN=$($GO env GOPATH)/bin
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/bin/memsize
CPU_CG=/sys/fs/cgroup/cpu
[ "$(id -u)" = 0 ] || { echo "memsize: needs root (a cgroup of the cpu controller)"; exit 2; }
[ -w "$CPU_CG" ] || { echo "memsize: no writable cgroup v1 cpu controller at $CPU_CG"; exit 2; }
mkdir -p "$OUT"
cd "$ROOT"
$GO build -o "$OUT/turnproc" ./bench/cmd/turnproc
$GO build -o "$OUT/benchdriver" ./bench/cmd/benchdriver
$GO build -o "$OUT/eventsproc" ./bench/cmd/eventsproc
$GO build -o "$OUT/turnshapes" ./bench/cmd/turnshapes
$GO test -c -o "$OUT/alarm.test" ./functions/alarm
$GO test -c -o "$OUT/reaper.test" ./functions/reaper
make --no-print-directory build >/dev/null

# Two cgroups: the function measured, and the events process beside the
# turn process (each function holds its own environment's CPU).
CG=$CPU_CG/commonly-memsize-$$
CGE=$CPU_CG/commonly-memsize-events-$$
mkdir "$CG" "$CGE"
cleanup() {
	# Back to the root cgroup, then away.
	for g in "$CG" "$CGE"; do
		if [ -f "$g/cgroup.procs" ]; then
			while read -r pid; do echo "$pid" > "$CPU_CG/cgroup.procs" 2>/dev/null || true; done < "$g/cgroup.procs"
			rmdir "$g" 2>/dev/null || true
		fi
	done
}
trap cleanup EXIT
PERIOD=100000
echo $PERIOD > "$CG/cpu.cfs_period_us"
echo $PERIOD > "$CGE/cpu.cfs_period_us"

# wrap NAME BIN [CGROUP]: a script that joins the cgroup, then execs BIN.
wrap() {
	printf '#!/bin/sh\necho $$ > %s/cgroup.procs && exec %s "$@"\n' "${3:-$CG}" "$2" > "$OUT/$1"
	chmod +x "$OUT/$1"
}
wrap turnproc-cg "$OUT/turnproc"
wrap eventsproc-cg "$OUT/eventsproc" "$CGE"
wrap turn-bootstrap-cg "$ROOT/bin/turn/bootstrap"
wrap alarm-bootstrap-cg "$ROOT/bin/alarm/bootstrap"
wrap reaper-bootstrap-cg "$ROOT/bin/reaper/bootstrap"

# quota MB: both cgroups held to MB's share of a vCPU (0: no quota).
quota() {
	local q=$(( $1 > 0 ? PERIOD * $1 / 1769 : -1 ))
	echo "$q" > "$CG/cpu.cfs_quota_us"
	echo "$q" > "$CGE/cpu.cfs_quota_us"
	echo "memsize: $1 MB: cpu.cfs_quota_us $q of $PERIOD" >&2
}
# throttled CGROUP: the cgroup's throttled periods and time (ms) so far.
throttled() { awk '/^nr_throttled/ {n=$2} /^throttled_time/ {t=$2} END {printf "%d %.1f", n, t/1e6}' "$1/cpu.stat"; }

# timed FN: REPEAT runs of a function's RIE test; prints the median ms.
timed() {
	local fn=$1 var=$2 ms=()
	for _ in $(seq "$REPEAT"); do
		local t0 t1
		t0=$(date +%s%N)
		(cd "functions/$fn" && env RIE_BIN="$GOBIN/aws-lambda-rie" "$var=$OUT/$fn-bootstrap-cg" \
			"$OUT/$fn.test" -test.run '^TestInvokeUnderRuntimeInterfaceEmulator$' -test.count 1 >/dev/null)
		t1=$(date +%s%N)
		ms+=($(( (t1 - t0) / 1000000 )))
	done
	printf '%s\n' "${ms[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

if [[ " $PARTS " == *" turn "* ]]; then
printf '| MB | CPU share | turn wall ms | turn CPU ms | turn cold start (emulator) ms | turn cold start (alone) ms | alarm invocation ms | reaper invocation ms |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n' > "$OUT/latest.md"
for mb in $SIZES; do
	quota "$mb"
	"$OUT/benchdriver" -ours-only -runs "$RUNS" -turns "$TURNS" -warmup "$WARMUP" -cold-starts "$COLD" \
		-turnproc "$OUT/turnproc-cg" -bootstrap "$OUT/turn-bootstrap-cg" -rie "$GOBIN/aws-lambda-rie" \
		-json "$OUT/turn-$mb.json" >/dev/null
	alarm=$(timed alarm ALARM_BOOTSTRAP)
	reaper=$(timed reaper REAPER_BOOTSTRAP)
	python3 - "$OUT/turn-$mb.json" "$mb" "$alarm" "$reaper" >> "$OUT/latest.md" <<'PY'
import json, sys
t = json.load(open(sys.argv[1])); mb = int(sys.argv[2])
share = f"{mb/1769:.3f} vCPU" if mb else "no quota"
print(f"| {mb or 'none'} | {share} | {t['wallMsPerTurn']:.2f} | {t['cpuMsPerTurn']:.2f} | {t['coldRieMs']:.1f} | {t['coldAloneMs']:.1f} | {sys.argv[3]} | {sys.argv[4]} |")
PY
done
cat "$OUT/latest.md"
fi

if [[ " $PARTS " == *" shapes "* ]]; then
rm -f "$OUT"/shapes-*.json
for pass in $(seq "$PASSES"); do
	for mb in $SIZES; do
		quota "$mb"
		read -r n0 t0 <<< "$(throttled "$CG")"; read -r en0 et0 <<< "$(throttled "$CGE")"
		cold=0
		[ "$pass" = "$PASSES" ] && cold=$COLD
		"$OUT/turnshapes" -turnproc "$OUT/turnproc-cg" -eventsproc "$OUT/eventsproc-cg" -shapes "$SHAPES" -rounds "$ROUNDS" -warmup 1 \
			-ttft "$TTFT" -interval "$INTERVAL" -cold "$cold" -label "$mb" -json "$OUT/shapes-$mb-$pass.json" >/dev/null
		read -r n1 t1 <<< "$(throttled "$CG")"; read -r en1 et1 <<< "$(throttled "$CGE")"
		echo "{\"mb\": $mb, \"pass\": $pass, \"turnThrottled\": $((n1 - n0)), \"turnThrottledMs\": $(awk "BEGIN {print $t1 - $t0}"), \"eventsThrottled\": $((en1 - en0)), \"eventsThrottledMs\": $(awk "BEGIN {print $et1 - $et0}")}" > "$OUT/throttled-$mb-$pass.json"
	done
done
"$OUT/turnshapes" -table "$OUT" > "$OUT/latest-shapes.md"
cat "$OUT/latest-shapes.md"
fi
