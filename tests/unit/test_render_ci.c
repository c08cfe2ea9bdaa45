/* The JUnit XML and Markdown of a directory of cores (render/render_ci.c)
 * for names and reasons no markup may pass through: XML's five markup
 * characters, control characters XML 1.0 cannot hold even as references,
 * bytes that are not UTF-8, and valid UTF-8 kept as it is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../render/crash_groups.h"
#include "check.h"

static char *junit(const struct cs_core_set *s)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return NULL;
	cs_core_set_junit(f, s);
	fclose(f);
	return text;
}

/* Every byte XML 1.0 can hold: no control character but \n and \t. */
static int xml_bytes_ok(const char *text)
{
	for (const unsigned char *p = (const unsigned char *)text; *p; p++)
		if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f)
			return 0;
	return 1;
}

int main(void)
{
	struct cs_core_set s = {.name = "dir <&> \"q\" 'a'"};
	cs_core_set_add_broken(&s, "core.\x01\x1b[31m.\xff\xfe",
			       "cut <off> & \"done\"");
	cs_core_set_add_broken(&s, "core.caf\xc3\xa9", "fine");
	char *text = junit(&s);
	CHECK(text != NULL, "no output");
	if (!text)
		return check_summary("render_ci");
	CHECK(xml_bytes_ok(text), "a control character in: %s", text);
	CHECK(strstr(text, "Ruby crashes in dir &lt;&amp;&gt; &quot;q&quot; "
			   "&apos;a&apos;") != NULL,
	      "the directory's name unescaped: %s", text);
	CHECK(strstr(text, "core.\\x01\\x1b[31m.\\xff\\xfe") != NULL,
	      "control characters and bytes not UTF-8 not written as \\xNN: "
	      "%s",
	      text);
	CHECK(strstr(text, "cut &lt;off&gt; &amp; &quot;done&quot;") != NULL,
	      "the reason unescaped: %s", text);
	CHECK(strstr(text, "core.caf\xc3\xa9") != NULL,
	      "valid UTF-8 not kept: %s", text);
	CHECK(strstr(text, "<testsuites name=\"corestack\" tests=\"0\" "
			   "failures=\"0\"") != NULL,
	      "not zero tests without a crash: %s", text);
	free(text);
	cs_core_set_free(&s);
	return check_summary("render_ci");
}
