/* A flame graph as a standalone SVG, from a profile's samples: one box
 * per frame, as wide as the samples under it, callers below callees, each
 * thread a box on the root "all", and on it one box per state its samples
 * were in ("[running]", "[waiting for GVL]", "[blocked]", "[gc]"), each
 * state in a colour of its own, under which its stacks grow. Hover shows
 * the name and the sample count (an SVG <title>), so it can be read
 * without a script; a title says what was recorded, and a script inside
 * the file (flamegraph_script.c) zooms into a box on a click and searches
 * names, as flamegraph.pl's SVGs do. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/fnv.h"
#include "flamegraph_script.h"
#include "profile_format.h"

struct node {
	const char *name; /* one of the profile's names, or "all" */
	int state; /* a state's box: its enum cs_profile_state; else -1 */
	size_t count;
	struct node *children; /* array */
	size_t nchildren, cap;
};

/* Names are interned: the same text is the same pointer. */
static struct node *child(struct node *n, const char *name)
{
	for (size_t i = 0; i < n->nchildren; i++)
		if (n->children[i].name == name)
			return &n->children[i];
	if (n->nchildren == n->cap) {
		size_t cap = n->cap ? n->cap * 2 : 4;
		struct node *c = realloc(n->children, cap * sizeof(*c));
		if (!c)
			return NULL;
		n->children = c;
		n->cap = cap;
	}
	struct node *c = &n->children[n->nchildren];
	memset(c, 0, sizeof(*c));
	c->name = name;
	c->state = -1;
	n->nchildren++;
	return c;
}

static void free_node(struct node *n)
{
	for (size_t i = 0; i < n->nchildren; i++)
		free_node(&n->children[i]);
	free(n->children);
}

static size_t depth_of(const struct node *n)
{
	size_t d = 0;
	for (size_t i = 0; i < n->nchildren; i++) {
		size_t c = depth_of(&n->children[i]);
		d = c > d ? c : d;
	}
	return d + 1;
}

static void escape(FILE *out, const char *s)
{
	for (; *s; s++)
		switch (*s) {
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '&':
			fputs("&amp;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		default:
			fputc(*s, out);
		}
}

#define WIDTH 1200.0
#define ROW 16
#define HEADER 40 /* the title and the controls, above the graph */

static void draw(FILE *out, const struct node *n, double x, size_t depth,
		 size_t height, double per_sample)
{
	double w = (double)n->count * per_sample;
	if (w < 0.1)
		return;
	/* green running, yellow waiting, blue blocked, purple gc */
	static const uint32_t state_rgb[CS_PROFILE_NSTATES][3] = {
		{80, 180, 80}, {230, 200, 60}, {110, 150, 210}, {170, 90, 200}};
	uint32_t h = fnv1a32_string(FNV1A32_BASIS, n->name);
	uint32_t rgb[3] = {205 + h % 50, 80 + (h >> 8) % 120,
			   40 + (h >> 16) % 40};
	if (n->state >= 0 && n->state < CS_PROFILE_NSTATES)
		memcpy(rgb, state_rgb[n->state], sizeof(rgb));
	double y = (double)(height - depth - 1) * ROW + HEADER;
	fprintf(out, "<g class=\"f\"><title>");
	escape(out, n->name);
	fprintf(out,
		" (%zu samples)</title><rect x=\"%.1f\" y=\"%.1f\" "
		"width=\"%.1f\" height=\"%d\" fill=\"rgb(%u,%u,%u)\" "
		"rx=\"2\"/>",
		n->count, x, y, w, ROW - 1, rgb[0], rgb[1], rgb[2]);
	/* every box has its text, empty when narrow, for the zoom to fill */
	fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">", x + 3, y + ROW - 4);
	if (w > 30) {
		size_t fit = (size_t)(w / 7);
		size_t len = strlen(n->name);
		char *shown = strndup(n->name, len > fit ? fit : len);
		if (shown)
			escape(out, shown);
		free(shown);
	}
	fputs("</text></g>\n", out);
	for (size_t i = 0; i < n->nchildren; i++) {
		draw(out, &n->children[i], x, depth + 1, height, per_sample);
		x += (double)n->children[i].count * per_sample;
	}
}

void cs_profile_write_flamegraph(FILE *out, const struct cs_profile *p,
				 const struct cs_profile_run *run)
{
	char state_box[CS_PROFILE_NSTATES]
		      [24]; /* names live as long as the tree */
	for (int i = 0; i < CS_PROFILE_NSTATES; i++)
		snprintf(state_box[i], sizeof(state_box[i]), "[%s]",
			 cs_profile_state_name(i));
	struct node root = {.name = "all", .state = -1};
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct cs_profile_sample *sa = &p->samples[i];
		const struct cs_profile_stack *s = &p->stacks[sa->stack];
		size_t count = sa->weight;
		root.count += count;
		size_t label = p->threads[sa->thread].label;
		struct node *n = child(&root, cs_profile_display(p, label));
		if (n) {
			n->count += count;
			n = child(n, state_box[sa->state % CS_PROFILE_NSTATES]);
		}
		if (n)
			n->state = (int)(sa->state % CS_PROFILE_NSTATES);
		for (size_t k = 0; n; k++) {
			n->count += count;
			if (k == s->nframes)
				break;
			n = child(n, cs_profile_frame_text(p, s->frames[k]));
		}
	}
	size_t height = depth_of(&root);
	fprintf(out,
		"<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
		"height=\"%zu\" font-family=\"monospace\" font-size=\"11\" "
		"data-width=\"%.0f\">\n",
		WIDTH, height * ROW + HEADER, WIDTH);
	cs_flamegraph_write_script(out);
	fprintf(out,
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
		"<text id=\"title\" x=\"%.0f\" y=\"16\" "
		"text-anchor=\"middle\" font-size=\"15\">Flame Graph: "
		"%zu samples in %.1f s (%.0f Hz)</text>\n"
		"<text id=\"reset\" x=\"10\" y=\"34\" "
		"style=\"display:none\">Reset Zoom</text>\n"
		"<text id=\"search\" x=\"%.0f\" y=\"34\" "
		"text-anchor=\"end\">Search</text>\n"
		"<text id=\"matched\" x=\"%.0f\" y=\"16\" "
		"text-anchor=\"end\"></text>\n",
		WIDTH / 2, run->taken ? run->taken : p->snapshots, run->seconds,
		run->rate, WIDTH - 10, WIDTH - 10);
	if (root.count)
		draw(out, &root, 0, 0, height, WIDTH / (double)root.count);
	fputs("</svg>\n", out);
	free_node(&root);
}
