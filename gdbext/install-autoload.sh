#!/bin/sh
# Write gdb auto-load scripts so that a gdb session on these Rubies gets
# ruby-bt and ruby-sample with no `source`: gdb loads
# SCRIPTS_DIR/<real path of an objfile>-gdb.py when it loads that objfile
# (the ruby executable, and its libruby.so.* when it has one).
#
#   install-autoload.sh DESTDIR SCRIPTS_DIR LOADER RUBY...
#   install-autoload.sh --remove DESTDIR SCRIPTS_DIR    (make uninstall)
set -eu
marker="# corestack: ruby-bt and ruby-sample for this Ruby (written by make install)."
if [ "${1:-}" = --remove ]; then
    dir=$2$3
    [ -d "$dir" ] || exit 0
    find "$dir" -name '*-gdb.py' -type f | while read -r script; do
        if [ "$(head -n 1 "$script")" = "$marker" ]; then
            rm -f "$script" && echo "install-autoload: removed $script"
        fi
    done
    find "$dir" -mindepth 1 -depth -type d -empty -delete
    exit 0
fi
destdir=$1 scripts_dir=$2 loader=$3
shift 3
mkdir -p "$destdir$scripts_dir"   # what the gdbinit snippet names
if [ $# -eq 0 ]; then
    echo "install-autoload: no ruby on PATH: no gdb auto-load script written" \
         "(make install RUBY=/path/to/ruby names the Rubies)" >&2
fi
for ruby in "$@"; do
    [ -x "$ruby" ] || { echo "install-autoload: no Ruby at $ruby" >&2; exit 1; }
    exe=$(readlink -f "$ruby")
    lib=
    if ldd "$exe" 2>/dev/null | grep -q 'libruby\.so'; then
        lib=$(ldd "$exe" 2>/dev/null | awk '/libruby\.so/ { print $3 }')
        if [ ! -f "$lib" ]; then
            echo "install-autoload: ldd cannot find the libruby of $ruby" \
                 "($(ldd "$exe" 2>/dev/null | awk '/libruby\.so/ { print $1 }')" \
                 "not found): script for the executable only; gdb" \
                 "loads the commands from it" >&2
            lib=
        fi
    fi
    for objfile in "$exe" ${lib:+$(readlink -f "$lib")}; do
        script="$destdir$scripts_dir$objfile-gdb.py"
        mkdir -p "$(dirname "$script")"
        cat > "$script" <<PY
$marker
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
