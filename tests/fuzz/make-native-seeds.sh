#!/bin/sh
# Seeds for fuzz_native (make fuzz-seeds):
#   make-native-seeds.sh MAKE_NATIVE_SEED OUT_DIR
# Builds tests/fuzz/native-target from native_target.c (committed: the
# seeds' return addresses and build-id are this binary's), runs it from
# the path fuzz_native's sysroot serves it at, gcores it parked in pause(),
# and shrinks the core with make_native_seed: seed1 keeps a page of stack
# from the stack pointer, seed2 only 256 bytes (the unwind stops early).
set -eu
shrink=$1 out=$2
dir=/tmp/corestack-fuzz-native
work=$(mktemp -d)
trap 'rm -rf "$work"; [ -z "${pid:-}" ] || kill $pid 2>/dev/null || true' EXIT
${CC:-cc} -std=c17 -O0 -g -static -nostdlib -fno-pie -no-pie \
	-fno-stack-protector -fasynchronous-unwind-tables -Wl,--build-id \
	tests/fuzz/native_target.c -o tests/fuzz/native-target
mkdir -p "$dir" "$out"
cp tests/fuzz/native-target "$dir/target"
env -i "$dir/target" &
pid=$!
sleep 0.5
gcore -o "$work/core" $pid >/dev/null 2>&1
"$shrink" "$work/core.$pid" "$out/seed1" 4096
"$shrink" "$work/core.$pid" "$out/seed2" 256
