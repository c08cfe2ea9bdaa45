/* The crash groups for a CI page: a Markdown job summary (GitHub's
 * $GITHUB_STEP_SUMMARY) and a JUnit XML document, one failing test case
 * per crash group (crash_groups.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../util/utf8.h"
#include "crash_groups.h"

/* Markdown text in a table cell or a list item: its punctuation escaped,
 * no line break. */
static void md_text(FILE *out, const char *s)
{
	for (const char *p = s ? s : "?"; *p; p++) {
		if (*p == '\n' || *p == '\r' || *p == '\t')
			fputc(' ', out);
		else if (strchr("\\`*_[]<>|#!&", *p))
			fprintf(out, "\\%c", *p);
		else
			fputc(*p, out);
	}
}

/* A fence longer than any run of backticks in text. */
static size_t fence_length(const char *text)
{
	size_t longest = 0, run = 0;
	for (const char *p = text ? text : ""; *p; p++) {
		run = *p == '`' ? run + 1 : 0;
		if (run > longest)
			longest = run;
	}
	return longest < 3 ? 3 : longest + 1;
}

static void md_fence(FILE *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fputc('`', out);
}

static void md_names(FILE *out, char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputs(", ", out);
		md_text(out, names[i]);
	}
}

/* One line per core without a crash (no_crash) or per broken core
 * ("NAME: REASON"), after prefix, its text written by text. */
static void others(FILE *out, const struct cs_core_set *s, bool no_crash,
		   const char *prefix, void (*text)(FILE *, const char *))
{
	size_t n = no_crash ? s->nno_crash : s->nbroken;
	for (size_t i = 0; i < n; i++) {
		fputs(prefix, out);
		text(out, no_crash ? s->no_crash[i] : s->broken[i].file);
		if (!no_crash) {
			fputs(": ", out);
			text(out, s->broken[i].reason);
		}
		fputc('\n', out);
	}
}

void cs_core_set_markdown(FILE *out, const struct cs_core_set *s)
{
	fputs("## Ruby crashes in ", out);
	md_text(out, s->name);
	fprintf(out,
		"\n\n%zu core%s crashed in %zu group%s; %zu no crash, %zu "
		"broken, %zu file%s skipped (not cores).\n",
		cs_core_set_crashes(s), cs_core_set_crashes(s) == 1 ? "" : "s",
		s->ngroups, s->ngroups == 1 ? "" : "s", s->nno_crash,
		s->nbroken, s->skipped, s->skipped == 1 ? "" : "s");
	if (s->ngroups) {
		fputs("\n| # | Count | Kind | Function | Ruby frames | Cores "
		      "|\n|---:|---:|---|---|---|---|\n",
		      out);
		for (size_t i = 0; i < s->ngroups; i++) {
			const struct cs_crash_group *g = &s->groups[i];
			fprintf(out, "| %zu | %zu | %s | ", i + 1, g->nfiles,
				g->sig.kind);
			md_text(out, g->sig.function);
			fputs(" | ", out);
			for (size_t k = 0; k < g->sig.nframes; k++) {
				if (k)
					fputs(" &larr; ", out);
				md_text(out, g->sig.frames[k]);
			}
			fputs(" | ", out);
			md_names(out, g->files, g->nfiles);
			fputs(" |\n", out);
		}
	}
	for (size_t i = 0; i < s->ngroups; i++) {
		const struct cs_crash_group *g = &s->groups[i];
		size_t fence = fence_length(g->stack);
		fprintf(out, "\n### %zu. %s in ", i + 1, g->sig.kind);
		md_text(out, g->sig.function);
		fprintf(out, " (%zu core%s)\n\nFirst core: ", g->nfiles,
			g->nfiles == 1 ? "" : "s");
		md_text(out, g->files[0]);
		fputs("\n\n", out);
		md_fence(out, fence);
		fputs("text\n", out);
		fputs(g->stack ? g->stack : "", out);
		if (g->stack && *g->stack &&
		    g->stack[strlen(g->stack) - 1] != '\n')
			fputc('\n', out);
		md_fence(out, fence);
		fputc('\n', out);
	}
	if (s->nbroken) {
		fputs("\n### Broken cores\n\n", out);
		others(out, s, false, "- ", md_text);
	}
	if (s->nno_crash) {
		fputs("\n### No crash\n\n", out);
		others(out, s, true, "- ", md_text);
	}
}

/* XML's escape of markup character c, or NULL. */
static const char *xml_entity(unsigned char c)
{
	switch (c) {
	case '&':
		return "&amp;";
	case '<':
		return "&lt;";
	case '>':
		return "&gt;";
	case '"':
		return "&quot;";
	case '\'':
		return "&apos;";
	default:
		return NULL;
	}
}

/* How many bytes at p XML 1.0 holds as they are: a printable ASCII
 * character, a newline or tab, a whole UTF-8 sequence; 0: none. */
static size_t xml_plain(const unsigned char *p)
{
	if (*p == '\n' || *p == '\t')
		return 1;
	if (*p < 0x20 || *p == 0x7f)
		return 0;
	return *p < 0x80 ? 1 : utf8_sequence_length(p);
}

/* Text in XML 1.0 content or an attribute: markup escaped; a control
 * character XML cannot hold (even as a reference) and a byte that is not
 * UTF-8 written as \xNN. */
static void xml_text(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	while (*p) {
		const char *entity = xml_entity(*p);
		size_t n = entity ? 0 : xml_plain(p);
		if (entity)
			fputs(entity, out);
		else if (n)
			fwrite(p, 1, n, out);
		else
			fprintf(out, "\\x%02x", *p);
		p += n ? n : 1;
	}
}

void cs_core_set_junit(FILE *out, const struct cs_core_set *s)
{
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", out);
	fprintf(out,
		"<testsuites name=\"corestack\" tests=\"%zu\" "
		"failures=\"%zu\" errors=\"0\">\n",
		s->ngroups, s->ngroups);
	fputs("  <testsuite name=\"Ruby crashes in ", out);
	xml_text(out, s->name);
	fprintf(out, "\" tests=\"%zu\" failures=\"%zu\" errors=\"0\">\n",
		s->ngroups, s->ngroups);
	for (size_t i = 0; i < s->ngroups; i++) {
		const struct cs_crash_group *g = &s->groups[i];
		char *sig = cs_crash_signature_text(&g->sig);
		fputs("    <testcase classname=\"corestack.crash\" name=\"",
		      out);
		xml_text(out, sig ? sig : g->sig.kind);
		fputs("\">\n      <failure type=\"", out);
		xml_text(out, g->sig.kind);
		fprintf(out, "\" message=\"%zu core%s: ", g->nfiles,
			g->nfiles == 1 ? "" : "s");
		xml_text(out, sig ? sig : g->sig.kind);
		fputs("\">", out);
		free(sig);
		fputs("cores:", out);
		for (size_t k = 0; k < g->nfiles; k++) {
			fputc(' ', out);
			xml_text(out, g->files[k]);
		}
		fputs("\n\n", out);
		xml_text(out, g->stack);
		fputs("</failure>\n    </testcase>\n", out);
	}
	fputs("    <system-out>", out);
	others(out, s, true, "no crash: ", xml_text);
	others(out, s, false, "broken: ", xml_text);
	fprintf(out, "skipped (not cores): %zu\n", s->skipped);
	fputs("</system-out>\n  </testsuite>\n</testsuites>\n", out);
}
