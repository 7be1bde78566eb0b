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
#
# A size of 0 is the reference: no quota (the machine's cores).
# Tunable: SIZES="0 128 256 512 1024" RUNS=3 TURNS=100 WARMUP=20 COLD=5 REPEAT=5
set -euo pipefail
SIZES=${SIZES:-"0 128 256 512 1024"}
RUNS=${RUNS:-3} TURNS=${TURNS:-100} WARMUP=${WARMUP:-20} COLD=${COLD:-5} REPEAT=${REPEAT:-5}
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
$GO test -c -o "$OUT/alarm.test" ./functions/alarm
$GO test -c -o "$OUT/reaper.test" ./functions/reaper
make --no-print-directory build >/dev/null

CG=$CPU_CG/commonly-memsize-$$
mkdir "$CG"
cleanup() {
	# Back to the root cgroup, then away.
	if [ -f "$CG/cgroup.procs" ]; then
		while read -r pid; do echo "$pid" > "$CPU_CG/cgroup.procs" 2>/dev/null || true; done < "$CG/cgroup.procs"
		rmdir "$CG" 2>/dev/null || true
	fi
}
trap cleanup EXIT
PERIOD=100000
echo $PERIOD > "$CG/cpu.cfs_period_us"

# wrap NAME BIN: a script that joins the cgroup, then execs BIN.
wrap() {
	printf '#!/bin/sh\necho $$ > %s/cgroup.procs && exec %s "$@"\n' "$CG" "$2" > "$OUT/$1"
	chmod +x "$OUT/$1"
}
wrap turnproc-cg "$OUT/turnproc"
wrap turn-bootstrap-cg "$ROOT/bin/turn/bootstrap"
wrap alarm-bootstrap-cg "$ROOT/bin/alarm/bootstrap"
wrap reaper-bootstrap-cg "$ROOT/bin/reaper/bootstrap"

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

printf '| MB | CPU share | turn wall ms | turn CPU ms | turn cold start (emulator) ms | turn cold start (alone) ms | alarm invocation ms | reaper invocation ms |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n' > "$OUT/latest.md"
for mb in $SIZES; do
	quota=$(( mb > 0 ? PERIOD * mb / 1769 : -1 ))
	echo "$quota" > "$CG/cpu.cfs_quota_us"
	echo "memsize: $mb MB: cpu.cfs_quota_us $quota of $PERIOD" >&2
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
