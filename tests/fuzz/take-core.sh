#!/bin/sh
# Take a core of a fixture Ruby parked in a scenario, for make_model_seed:
#   take-core.sh RUBY SCENARIO.rb OUTDIR   -> prints the core's path
# Runs the scenario with $CORESTACK_ORACLE set, waits for the oracle file
# (written once every thread is parked), gcores it, then kills it.
set -eu
ruby=$1 scenario=$2 out=$3
mkdir -p "$out"
oracle="$out/oracle.json"
rm -f "$oracle" "$out"/core.*
CORESTACK_ORACLE="$oracle" "$ruby" "$scenario" >"$out/scenario.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
i=0
while [ ! -e "$oracle" ]; do
	i=$((i + 1))
	if [ $i -gt 120 ] || ! kill -0 $pid 2>/dev/null; then
		echo "take-core.sh: $scenario did not park" >&2
		exit 1
	fi
	sleep 0.5
done
gcore -o "$out/core" $pid >/dev/null 2>&1
echo "$out/core.$pid"
