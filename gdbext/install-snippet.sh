#!/bin/sh
# Write the gdbinit snippet that tells gdb to read and trust the auto-load
# scripts directory, and say how gdb comes to read it.
#
#   install-snippet.sh DESTDIR SNIPPET AUTOLOAD_DIR
set -eu
destdir=$1 snippet=$2 autoload=$3
dir=$(dirname "$destdir$snippet")
if ! mkdir -p "$dir" 2>/dev/null || [ ! -w "$dir" ]; then
    echo "install-snippet: cannot write $dir (not root?): run make install as" \
         "root, or GDB_SYSTEM_GDBINIT_DIR= to leave the snippet out" >&2
    exit 1
fi
sed -e "s|@GDB_AUTOLOAD_DIR@|$autoload|g" -e "s|@SNIPPET@|$snippet|g" \
    "$(dirname "$0")/corestack.gdb.in" > "$destdir$snippet"
echo "install-snippet: $destdir$snippet"
# gdb reads its system gdbinit directory by itself; any other, when told.
sysdir=$(gdb -nx -batch -ex 'show configuration' 2>/dev/null |
         sed -n 's/.*--with-system-gdbinit-dir=\([^ ]*\).*/\1/p' | head -n 1)
if [ "$(dirname "$snippet")" != "${sysdir:-/etc/gdb/gdbinit.d}" ]; then
    echo "install-snippet: gdb does not read $(dirname "$snippet") by itself:" \
         "add 'source $snippet' to ~/.gdbinit" >&2
fi
