/* A thread's exception ($!) in text and JSON: the thread line and "threads"
 * show it, and the crash summary shows the crashed thread's. Formatting
 * only. */
#include <stdio.h>

#include "../util/json.h"
#include "../engine/report.h"

/* text as String#inspect shows a UTF-8 string, for its ASCII: quoted,
 * the quote, the backslash, "#{", "#$" and "#@" escaped, control
 * characters by name or as \uXXXX. Other characters are left as they are. */
static void quoted(FILE *out, const char *text)
{
	/* the character and its escape's letter, "\a" to "\e" */
	static const char named[][2] = {
		{'\a', 'a'}, {'\b', 'b'}, {'\t', 't'}, {'\n', 'n'},
		{'\v', 'v'}, {'\f', 'f'}, {'\r', 'r'}, {0x1b, 'e'},
	};
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
		char name = 0;
		for (size_t i = 0; i < sizeof(named) / sizeof(*named); i++)
			if ((unsigned char)named[i][0] == *p)
				name = named[i][1];
		if (name)
			fprintf(out, "\\%c", name);
		else if (*p == '"' || *p == '\\' ||
			 (*p == '#' &&
			  (p[1] == '{' || p[1] == '$' || p[1] == '@')))
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(out, "\\u%04X", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

void cs_render_exception_text(FILE *out, const struct rv_thread *t)
{
	fprintf(out, "%s (0x%llx)",
		t->exception_class ? t->exception_class : "?",
		(unsigned long long)t->exception);
	if (t->exception_message) {
		fputs(": ", out);
		quoted(out, t->exception_message);
	} else if (t->exception_message_error) {
		fprintf(out, " <message unknown: %s>",
			t->exception_message_error);
	}
}

void cs_render_exception_json(struct json *j, const struct rv_thread *t)
{
	if (!t || !t->exception) {
		json_null(j, "exception");
		return;
	}
	json_begin_object(j, "exception");
	json_hex_string(j, "object", t->exception);
	json_string(j, "class", t->exception_class);
	json_string(j, "message", t->exception_message);
	json_string(j, "message_error", t->exception_message_error);
	json_end_object(j);
}
