/* A flame graph as a standalone SVG, from a profile's collapsed lines:
 * one box per frame, as wide as the samples under it, callers below
 * callees, each thread a box on the root "all". Hover shows the name and
 * the sample count (an SVG <title>); no script is needed to view it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profile_format.h"

struct node {
	const char *name; /* one of the profile's names, or "all" */
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

static void draw(FILE *out, const struct node *n, double x, size_t depth,
		 size_t height, double per_sample)
{
	double w = (double)n->count * per_sample;
	if (w < 0.1)
		return;
	uint32_t h = 2166136261u;
	for (const char *c = n->name; *c; c++)
		h = (h ^ (uint8_t)*c) * 16777619u;
	double y = (double)(height - depth - 1) * ROW;
	fprintf(out, "<g><title>");
	escape(out, n->name);
	fprintf(out,
		" (%zu samples)</title><rect x=\"%.1f\" y=\"%.1f\" "
		"width=\"%.1f\" height=\"%d\" fill=\"rgb(%u,%u,%u)\" "
		"rx=\"2\"/>",
		n->count, x, y, w, ROW - 1, 205 + h % 50, 80 + (h >> 8) % 120,
		40 + (h >> 16) % 40);
	if (w > 30) {
		fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" clip-path=\"none\">",
			x + 3, y + ROW - 4);
		size_t fit = (size_t)(w / 7);
		size_t len = strlen(n->name);
		char *shown = strndup(n->name, len > fit ? fit : len);
		if (shown)
			escape(out, shown);
		free(shown);
		fputs("</text>", out);
	}
	fputs("</g>\n", out);
	for (size_t i = 0; i < n->nchildren; i++) {
		draw(out, &n->children[i], x, depth + 1, height, per_sample);
		x += (double)n->children[i].count * per_sample;
	}
}

void cs_profile_write_flamegraph(FILE *out, const struct cs_profile *p,
				 const struct cs_profile_run *run)
{
	(void)run;
	struct node root = {.name = "all"};
	for (size_t i = 0; i < p->nline_slots; i++) {
		const struct cs_profile_line *l = &p->lines[i];
		if (!l->count)
			continue;
		const struct cs_profile_stack *s = &p->stacks[l->stack];
		root.count += l->count;
		size_t label = p->threads[l->thread].label;
		struct node *n = child(&root, cs_profile_display(p, label));
		for (size_t k = 0; n; k++) {
			n->count += l->count;
			if (k == s->nframes)
				break;
			n = child(n, cs_profile_frame_text(p, s->frames[k]));
		}
	}
	size_t height = depth_of(&root);
	fprintf(out,
		"<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
		"height=\"%zu\" font-family=\"monospace\" font-size=\"11\">\n",
		WIDTH, height * ROW);
	if (root.count)
		draw(out, &root, 0, 0, height, WIDTH / (double)root.count);
	fputs("</svg>\n", out);
	free_node(&root);
}
