#!/usr/bin/env bash
# Seeds for fuzz_dwarf: small shared objects whose DWARF describes CRuby's
# real structs, compiled from a fixture Ruby's configured source tree.
#
#   tests/fuzz/make-dwarf-seeds.sh RUBY_SOURCE_DIR OUT_DIR
#
# Two compile units, named vm.c and iseq.c like the units layout.def names,
# each keeping pointers to the structs the model reads; a second seed keeps
# every type (enumerators included) with -fno-eliminate-unused-debug-types,
# and a third has .debug_macro (-g3), the path macro-only constants take.
set -euo pipefail
src=$1 out=$(mkdir -p "$2" && cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/seed.c" <<'C'
#include "ruby/ruby.h"
#include "vm_core.h"
#include "iseq.h"
#include "method.h"
#if __has_include("internal/class.h")
#include "internal/class.h"
#include "internal/string.h"
#else
#include "internal.h" /* 2.7: one internal header */
#endif
#include "ruby/st.h"
#define KEEP static __attribute__((used))
KEEP rb_vm_t *seed_vm;
KEEP rb_thread_t *seed_thread;
KEEP rb_execution_context_t *seed_ec;
KEEP rb_control_frame_t *seed_cfp;
KEEP rb_iseq_t *seed_iseq;
KEEP rb_callable_method_entry_t *seed_me;
KEEP struct RString *seed_string;
KEEP struct RArray *seed_array;
KEEP struct RClass *seed_class;
KEEP struct iseq_insn_info_entry *seed_insn_info;
KEEP st_table *seed_st;
C
cp "$work/seed.c" "$work/vm.c"
cp "$work/seed.c" "$work/iseq.c"

inc=(-I"$src/.ext/include/$(uname -m)-linux" -I"$src/include" -I"$src")
cd "$work"
gcc -g -O0 -shared -fPIC "${inc[@]}" vm.c iseq.c -o "$out/reachable-types.so"
gcc -g -O0 -fno-eliminate-unused-debug-types -shared -fPIC "${inc[@]}" \
    vm.c iseq.c -o "$out/all-types.so"
gcc -g3 -O0 -shared -fPIC "${inc[@]}" vm.c -o "$out/with-macros.so"
