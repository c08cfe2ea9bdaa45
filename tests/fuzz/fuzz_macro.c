/* libFuzzer harness for dwarf/macros.c: dw_macro_eval_text on arbitrary
 * text (no macro table), as a NUL-terminated string of at most 4 KiB.
 * Build: see tests/fuzz/Makefile.inc (make fuzz-build). */
#include "dwarf/macros.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TEXT 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > MAX_TEXT)
		size = MAX_TEXT;
	/* exactly size + 1 bytes, so ASan sees any read past the NUL */
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	int64_t v = 0;
	struct cs_error *err = dw_macro_eval_text(NULL, text, &v);
	if (err && !err->message)
		abort();
	cs_error_destroy(err);
	free(text);
	return 0;
}
