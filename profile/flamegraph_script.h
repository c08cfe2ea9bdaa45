/* The script inside a flame graph SVG (profile_flamegraph.c). */
#ifndef CS_CORESTACK_FLAMEGRAPH_SCRIPT_H
#define CS_CORESTACK_FLAMEGRAPH_SCRIPT_H

#include <stdio.h>

/* A <script> element: a click on a box zooms into it (its callees spread
 * over the width, its callers kept below, the rest hidden), "Reset Zoom"
 * or Escape undoes it; "Search" or Ctrl-F asks for a regular expression,
 * colours the boxes whose names match and shows their share of the
 * samples. "#s=REGEX" and "#z=NAME" after the file's address do the same
 * when it opens (z: the widest box of that name). It expects the boxes
 * as <g class="f"> holding a <title> "NAME (N samples)", a <rect> and a
 * <text>, and the texts with ids reset, search and matched. */
void cs_flamegraph_write_script(FILE *out);

#endif
