#include "profile.h"

#include "../util/json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void cs_profile_init(struct cs_profile *p)
{
	memset(p, 0, sizeof(*p));
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 14695981039346656037ULL;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ULL;
	return h;
}

static size_t *slot_for(struct cs_profile *p, const char *key, int *fresh)
{
	size_t i = hash_str(key) & (p->nslots - 1);
	while (p->keys[i] && strcmp(p->keys[i], key) != 0)
		i = (i + 1) & (p->nslots - 1);
	*fresh = p->keys[i] == NULL;
	return &p->counts[i];
}

static int grow(struct cs_profile *p)
{
	size_t n = p->nslots ? p->nslots * 2 : 256;
	char **keys = calloc(n, sizeof(*keys));
	size_t *counts = calloc(n, sizeof(*counts));
	if (!keys || !counts) {
		free(keys);
		free(counts);
		return 0;
	}
	struct cs_profile old = *p;
	p->grown++; /* the memos' slots are stale */
	p->keys = keys;
	p->counts = counts;
	p->nslots = n;
	for (size_t i = 0; i < old.nslots; i++) {
		if (!old.keys[i])
			continue;
		int fresh;
		size_t *c = slot_for(p, old.keys[i], &fresh);
		p->keys[c - p->counts] = old.keys[i];
		*c = old.counts[i];
	}
	free(old.keys);
	free(old.counts);
	return 1;
}

/* Count key (taking it), and tell the slot it was counted in. */
static int count(struct cs_profile *p, char *key, size_t *slot)
{
	if ((p->nkeys + 1) * 2 > p->nslots && !grow(p)) {
		free(key);
		return 0;
	}
	int fresh;
	size_t *c = slot_for(p, key, &fresh);
	if (fresh) {
		p->keys[c - p->counts] = key;
		p->nkeys++;
	} else {
		free(key);
	}
	(*c)++;
	*slot = (size_t)(c - p->counts);
	return 1;
}

/* ';' separates frames in collapsed stacks: keep it out of names. */
static void append(char **buf, size_t *len, size_t *cap, const char *s)
{
	size_t n = strlen(s);
	if (*len + n + 2 > *cap) {
		size_t c = (*len + n + 2) * 2;
		char *b = realloc(*buf, c);
		if (!b)
			return;
		*buf = b;
		*cap = c;
	}
	if (*len)
		(*buf)[(*len)++] = ';';
	for (size_t i = 0; i < n; i++)
		(*buf)[(*len)++] = s[i] == ';' ? ':' : s[i];
	(*buf)[*len] = '\0';
}

static bool same_text(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static void forget_memos(struct cs_profile *p)
{
	for (size_t i = 0; i < p->nmemos; i++) {
		free(p->memos[i].name);
		free(p->memos[i].ids);
	}
	free(p->memos);
	p->memos = NULL;
	p->nmemos = 0;
}

/* The memo of the thread at index in a snapshot of nthreads. Threads keep
 * their order from one snapshot to the next, so the memo at the same index
 * is tried first; memos of threads long gone are dropped all at once. */
static struct cs_profile_memo *memo_of(struct cs_profile *p,
				       const struct rv_thread *t, size_t index,
				       size_t nthreads)
{
	if (index < p->nmemos && p->memos[index].thread == t->addr)
		return &p->memos[index];
	for (size_t i = 0; i < p->nmemos; i++)
		if (p->memos[i].thread == t->addr)
			return &p->memos[i];
	if (p->nmemos >= 2 * nthreads + 64)
		forget_memos(p);
	struct cs_profile_memo *grown =
		realloc(p->memos, (p->nmemos + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	p->memos = grown;
	grown[p->nmemos] = (struct cs_profile_memo){.thread = t->addr};
	return &grown[p->nmemos++];
}

/* The thread's stack was counted in m->slot last time, and its frames and
 * name are the same now: count it again. */
static bool count_again(struct cs_profile *p, const struct cs_profile_memo *m,
			const struct rv_thread *t, size_t index)
{
	if (!m || !m->valid || m->grown != p->grown || m->nids != t->nframes ||
	    m->tid != t->tid || m->index != index ||
	    !same_text(m->name, t->name))
		return false;
	for (size_t j = 0; j < t->nframes; j++)
		if (!t->frames[j].names_id || t->frames[j].names_id != m->ids[j])
			return false;
	p->counts[m->slot]++;
	return true;
}

static void remember(struct cs_profile *p, struct cs_profile_memo *m,
		     const struct rv_thread *t, size_t index, size_t slot)
{
	if (!m)
		return;
	m->valid = false;
	if (t->nframes > m->cap) {
		uint64_t *ids = realloc(m->ids, t->nframes * sizeof(*ids));
		if (!ids)
			return;
		m->ids = ids;
		m->cap = t->nframes;
	}
	free(m->name);
	m->name = t->name ? strdup(t->name) : NULL;
	if (t->name && !m->name)
		return;
	for (size_t j = 0; j < t->nframes; j++)
		m->ids[j] = t->frames[j].names_id;
	m->nids = t->nframes;
	m->tid = t->tid;
	m->index = index; /* in the label when there is no tid */
	m->slot = slot;
	m->grown = p->grown;
	m->valid = true;
}

int cs_profile_add(struct cs_profile *p, const struct rv_process *proc,
		   int on_cpu)
{
	for (size_t i = 0; i < proc->nthreads; i++) {
		const struct rv_thread *t = &proc->threads[i];
		if (on_cpu && !t->holds_gvl)
			continue;
		struct cs_profile_memo *memo = memo_of(p, t, i, proc->nthreads);
		if (count_again(p, memo, t, i))
			continue;
		char thread[64];
		if (t->name)
			snprintf(thread, sizeof(thread), "%s", t->name);
		else if (t->tid >= 0)
			snprintf(thread, sizeof(thread), "thread %lld",
				 (long long)t->tid);
		else
			snprintf(thread, sizeof(thread), "thread %zu", i + 1);
		char *buf = NULL;
		size_t len = 0, cap = 0;
		append(&buf, &len, &cap, thread);
		for (size_t j = t->nframes; j-- > 0;) {
			const struct rv_frame *f = &t->frames[j];
			append(&buf, &len, &cap,
			       f->qualified ? f->qualified
			       : f->label   ? f->label
					    : "?");
		}
		size_t slot;
		if (!buf || !count(p, buf, &slot))
			return 0;
		remember(p, memo, t, i, slot);
	}
	p->samples++;
	return 1;
}

void cs_profile_write_collapsed(const struct cs_profile *p, FILE *out)
{
	for (size_t i = 0; i < p->nslots; i++)
		if (p->keys[i])
			fprintf(out, "%s %zu\n", p->keys[i], p->counts[i]);
}

struct tally {
	char *name;
	size_t self, total;
};

static int by_self(const void *a, const void *b)
{
	const struct tally *x = a, *y = b;
	return x->self != y->self ? (x->self < y->self ? 1 : -1)
				  : (x->total < y->total) - (x->total > y->total);
}

static struct tally *tally_of(struct tally **t, size_t *n, const char *name,
			      size_t len)
{
	for (size_t i = 0; i < *n; i++)
		if (strlen((*t)[i].name) == len &&
		    memcmp((*t)[i].name, name, len) == 0)
			return &(*t)[i];
	struct tally *grown = realloc(*t, (*n + 1) * sizeof(**t));
	if (!grown)
		return NULL;
	*t = grown;
	grown[*n] = (struct tally){strndup(name, len), 0, 0};
	return grown[*n].name ? &grown[(*n)++] : NULL;
}

/* Self: samples with the frame innermost; total: samples with the frame
 * anywhere in the stack (counted once per stack). The thread is left out. */
void cs_profile_write_summary(const struct cs_profile *p, FILE *out,
			      size_t lost, double seconds, double rate)
{
	struct tally *t = NULL;
	size_t n = 0, stacks = 0;
	for (size_t i = 0; i < p->nslots; i++) {
		if (!p->keys[i])
			continue;
		const char *k = strchr(p->keys[i], ';');
		if (!k)
			continue; /* a thread without frames */
		stacks += p->counts[i];
		for (const char *f = k + 1;;) {
			const char *e = strchr(f, ';');
			size_t len = e ? (size_t)(e - f) : strlen(f);
			struct tally *x = tally_of(&t, &n, f, len);
			if (x) {
				/* count a frame once per stack */
				int seen = 0;
				for (const char *g = k + 1; g < f;) {
					const char *ge = strchr(g, ';');
					size_t gl = (size_t)(ge - g);
					if (gl == len && !memcmp(g, f, len))
						seen = 1;
					g = ge + 1;
				}
				if (!seen)
					x->total += p->counts[i];
				if (!e)
					x->self += p->counts[i];
			}
			if (!e)
				break;
			f = e + 1;
		}
	}
	if (n)
		qsort(t, n, sizeof(*t), by_self);
	fprintf(out, "%zu samples in %.1f s (%.0f Hz), %zu lost; %zu thread "
		     "stacks with Ruby frames\n\n",
		p->samples, seconds, rate, lost, stacks);
	fprintf(out, "%7s %7s %7s  %s\n", "self", "self%", "total", "frame");
	for (size_t i = 0; i < n && i < 20; i++)
		fprintf(out, "%7zu %6.1f%% %7zu  %s\n", t[i].self,
			stacks ? 100.0 * (double)t[i].self / (double)stacks : 0,
			t[i].total, t[i].name);
	for (size_t i = 0; i < n; i++)
		free(t[i].name);
	free(t);
}

/* Index of name in the shared frame list, adding it (linear: profiles
 * have hundreds of distinct frames, not millions). */
static size_t frame_index(char ***names, size_t *n, const char *name,
			  size_t len)
{
	for (size_t i = 0; i < *n; i++)
		if (strlen((*names)[i]) == len && !memcmp((*names)[i], name, len))
			return i;
	char **grown = realloc(*names, (*n + 1) * sizeof(*grown));
	char *copy = strndup(name, len);
	if (!grown || !copy) {
		free(copy);
		if (grown)
			*names = grown;
		return SIZE_MAX;
	}
	*names = grown;
	grown[*n] = copy;
	return (*n)++;
}

void cs_profile_write_speedscope(const struct cs_profile *p, FILE *out)
{
	char **names = NULL, **threads = NULL;
	size_t nnames = 0, nthreads = 0;
	/* Frame and thread tables first: speedscope wants indexes. */
	for (size_t i = 0; i < p->nslots; i++) {
		if (!p->keys[i])
			continue;
		const char *k = p->keys[i], *semi = strchr(k, ';');
		frame_index(&threads, &nthreads, k, semi ? (size_t)(semi - k)
							 : strlen(k));
		for (const char *f = semi ? semi + 1 : NULL; f;) {
			const char *e = strchr(f, ';');
			frame_index(&names, &nnames, f,
				    e ? (size_t)(e - f) : strlen(f));
			f = e ? e + 1 : NULL;
		}
	}
	struct json j = {.out = out};
	json_begin_object(&j, NULL);
	json_string(&j, "$schema",
		    "https://www.speedscope.app/file-format-schema.json");
	json_string(&j, "exporter", "corestack record");
	json_begin_object(&j, "shared");
	json_begin_array(&j, "frames");
	for (size_t i = 0; i < nnames; i++) {
		json_begin_object(&j, NULL);
		json_string(&j, "name", names[i]);
		json_end_object(&j);
	}
	json_end_array(&j);
	json_end_object(&j);
	json_begin_array(&j, "profiles");
	for (size_t t = 0; t < nthreads; t++) {
		size_t total = 0, tl = strlen(threads[t]);
		json_begin_object(&j, NULL);
		json_string(&j, "type", "sampled");
		json_string(&j, "name", threads[t]);
		json_string(&j, "unit", "none");
		json_int(&j, "startValue", 0);
		json_begin_array(&j, "samples");
		for (size_t i = 0; i < p->nslots; i++) {
			const char *k = p->keys[i];
			if (!k || strncmp(k, threads[t], tl) != 0 ||
			    (k[tl] != ';' && k[tl]))
				continue;
			json_begin_array(&j, NULL);
			for (const char *f = k[tl] ? k + tl + 1 : NULL; f;) {
				const char *e = strchr(f, ';');
				json_int(&j, NULL,
					 (int64_t)frame_index(
						 &names, &nnames, f,
						 e ? (size_t)(e - f) : strlen(f)));
				f = e ? e + 1 : NULL;
			}
			json_end_array(&j);
			total += p->counts[i];
		}
		json_end_array(&j);
		json_begin_array(&j, "weights");
		for (size_t i = 0; i < p->nslots; i++) {
			const char *k = p->keys[i];
			if (k && !strncmp(k, threads[t], tl) &&
			    (k[tl] == ';' || !k[tl]))
				json_int(&j, NULL, (int64_t)p->counts[i]);
		}
		json_end_array(&j);
		json_int(&j, "endValue", (int64_t)total);
		json_end_object(&j);
	}
	json_end_array(&j);
	json_end_object(&j);
	for (size_t i = 0; i < nnames; i++)
		free(names[i]);
	for (size_t i = 0; i < nthreads; i++)
		free(threads[i]);
	free(names);
	free(threads);
}

void cs_profile_free(struct cs_profile *p)
{
	for (size_t i = 0; i < p->nslots; i++)
		free(p->keys[i]);
	free(p->keys);
	free(p->counts);
	forget_memos(p);
	memset(p, 0, sizeof(*p));
}
