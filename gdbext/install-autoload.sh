#!/bin/sh
# Write gdb auto-load scripts so that a gdb session on these Rubies gets
# ruby-bt and ruby-sample with no `source`: gdb loads
# SCRIPTS_DIR/<real path of an objfile>-gdb.py when it loads that objfile
# (the ruby executable, and its libruby.so.* when it has one).
#
#   install-autoload.sh DESTDIR SCRIPTS_DIR LOADER RUBY...
set -eu
destdir=$1 scripts_dir=$2 loader=$3
shift 3
for ruby in "$@"; do
    [ -x "$ruby" ] || { echo "install-autoload: no Ruby at $ruby" >&2; exit 1; }
    exe=$(readlink -f "$ruby")
    lib=$(ldd "$exe" 2>/dev/null | awk '/libruby\.so/ { print $3 }')
    for objfile in "$exe" ${lib:+$(readlink -f "$lib")}; do
        script="$destdir$scripts_dir$objfile-gdb.py"
        mkdir -p "$(dirname "$script")"
        cat > "$script" <<PY
# corestack: ruby-bt and ruby-sample for this Ruby (written by make install).
import sys
import gdb
if not getattr(gdb, "corestack_loaded", False):
    gdb.corestack_loaded = True
    sys.path.insert(0, "$(dirname "$loader")")   # where _corestack is
    gdb.execute("source $loader")
PY
        echo "install-autoload: $script"
    done
done
