/* The Firefox Profiler's Gecko profile format, the JSON the Firefox
 * Profiler (profiler.firefox.com) loads and processes: meta (the format's
 * version, the sampling interval, the start time, the product, the frame
 * categories), and one thread per Ruby thread with its own string table,
 * frame table, stack table (a tree: each row a frame and the row of its
 * caller), samples and markers. Each table is an object with a schema
 * (column name -> index) and rows in data. Times are milliseconds since
 * meta.startTime (milliseconds since the epoch).
 *
 * A frame's location is its function's name, followed by its Ruby file in
 * parentheses when it has one; its line is the frame's, its category its
 * kind. A sample that saw a thread in one stack for n snapshots in a row
 * is written as n samples, one sampling period apart.
 *
 * Each thread's states are markers on its track (a "ThreadState" interval
 * per run of samples in one state: running, waiting for GVL, blocked with
 * what it waits on, gc), named by the state, so the marker chart shows when
 * a thread ran, waited for the GVL, slept or collected garbage. */
#include "profile_format.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../util/json.h"
#include "../util/u64map.h"

/* The version of the Gecko format this writes; the Firefox Profiler
 * upgrades a profile of an older version when it loads it. */
#define GECKO_VERSION 30

/* meta.categories, by a frame's kind (category_of). */
static const struct {
	const char *name, *color;
} categories[] = {
	{"Other", "grey"},
	{"Ruby", "red"},
	{"C method", "yellow"},
	{"Native", "blue"},
};

static int category_of(enum cs_profile_kind kind)
{
	switch (kind) {
	case CS_PROFILE_RUBY:
		return 1;
	case CS_PROFILE_CFUNC:
		return 2;
	case CS_PROFILE_NATIVE:
		return 3;
	}
	return 0;
}

/* A row of a thread's stack table. */
struct node {
	size_t prefix; /* its caller's row; SIZE_MAX: a root */
	size_t frame;  /* in the thread's frame table */
};

/* One thread's tables, each in the order of first use. The maps from the
 * profile's ids (SIZE_MAX: not in this thread's tables) are shared by
 * every thread; each thread resets the entries it set. */
struct tables {
	size_t *string_of, *frame_of, *stack_of; /* function, frame, stack */
	size_t *strings; /* string i: location of function strings[i] */
	size_t *frames;  /* frame i: the profile's frame frames[i] */
	size_t *stacks;  /* the profile's stacks stack_of holds */
	struct node *nodes;
	size_t nstrings, nframes, nstacks, nnodes;
	size_t cap_strings, cap_frames, cap_stacks, cap_nodes;
	struct u64map node_index; /* (prefix, frame) -> row + 1 */
	size_t key_base;          /* the profile's frame count + 1 */
	bool failed;
};

/* Room for one more of *n items of size bytes in *list. */
static bool room(void *list, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return true;
	size_t grown = *cap ? 2 * *cap : 64;
	void *p = realloc(*(void **)list, grown * size);
	if (!p)
		return false;
	*(void **)list = p;
	*cap = grown;
	return true;
}

static size_t string_of_function(struct tables *t, size_t function)
{
	if (t->string_of[function] != SIZE_MAX)
		return t->string_of[function];
	if (!room(&t->strings, &t->cap_strings, t->nstrings,
		  sizeof(*t->strings))) {
		t->failed = true;
		return 0;
	}
	t->strings[t->nstrings] = function;
	return t->string_of[function] = t->nstrings++;
}

static size_t frame_of(struct tables *t, const struct cs_profile *p,
		       size_t frame)
{
	if (t->frame_of[frame] != SIZE_MAX)
		return t->frame_of[frame];
	string_of_function(t, p->frames[frame].function);
	if (!room(&t->frames, &t->cap_frames, t->nframes, sizeof(*t->frames))) {
		t->failed = true;
		return 0;
	}
	t->frames[t->nframes] = frame;
	return t->frame_of[frame] = t->nframes++;
}

/* The row of frame called from prefix, added when new. */
static size_t node_of(struct tables *t, size_t prefix, size_t frame)
{
	uint64_t key = ((uint64_t)prefix + 1) * t->key_base + frame + 1;
	int found = 0;
	uintptr_t v = (uintptr_t)u64map_get(&t->node_index, key, &found);
	/* a key that wrapped around may name another row: then add one */
	if (found && t->nodes[v - 1].prefix == prefix &&
	    t->nodes[v - 1].frame == frame)
		return v - 1;
	if (!room(&t->nodes, &t->cap_nodes, t->nnodes, sizeof(*t->nodes)) ||
	    !u64map_put(&t->node_index, key,
			(void *)(uintptr_t)(t->nnodes + 1))) {
		t->failed = true;
		return 0;
	}
	t->nodes[t->nnodes] = (struct node){prefix, frame};
	return t->nnodes++;
}

/* The row of a profile stack's innermost frame; SIZE_MAX for a stack
 * without frames. */
static size_t stack_of(struct tables *t, const struct cs_profile *p,
		       size_t stack)
{
	if (t->stack_of[stack] != SIZE_MAX)
		return t->stack_of[stack];
	const struct cs_profile_stack *s = &p->stacks[stack];
	size_t row = SIZE_MAX;
	for (size_t k = 0; k < s->nframes; k++)
		row = node_of(t, row, frame_of(t, p, s->frames[k]));
	if (row == SIZE_MAX)
		return row;
	if (!room(&t->stacks, &t->cap_stacks, t->nstacks, sizeof(*t->stacks))) {
		t->failed = true;
		return row;
	}
	t->stacks[t->nstacks++] = stack;
	return t->stack_of[stack] = row;
}

/* Empties the tables for the next thread. */
static void reset(struct tables *t, const struct cs_profile *p)
{
	for (size_t i = 0; i < t->nstrings; i++)
		t->string_of[t->strings[i]] = SIZE_MAX;
	for (size_t i = 0; i < t->nframes; i++)
		t->frame_of[t->frames[i]] = SIZE_MAX;
	for (size_t i = 0; i < t->nstacks; i++)
		t->stack_of[t->stacks[i]] = SIZE_MAX;
	t->nstrings = t->nframes = t->nstacks = t->nnodes = 0;
	u64map_free(&t->node_index, NULL);
	t->node_index = (struct u64map){0};
	t->key_base = p->nframes + 1;
}

/* Each column's index, in the schema of a table. */
static void schema(struct json *j, const char *const *columns, size_t n)
{
	json_begin_object(j, "schema");
	for (size_t i = 0; i < n; i++)
		json_int(j, columns[i], (int64_t)i);
	json_end_object(j);
}

#define SCHEMA(j, columns) \
	schema((j), (columns), sizeof(columns) / sizeof(*(columns)))

/* One thread's samples: the samples of the profile listed in order, each
 * as many times as its weight. */
struct thread_samples {
	const size_t *ids;
	size_t n;
	uint64_t start_ns, period_ns; /* time 0, the sampling period */
};

static void write_samples(struct json *j, const struct cs_profile *p,
			  struct tables *t, const struct thread_samples *ts)
{
	static const char *const columns[] = {"stack", "time", "eventDelay"};
	json_begin_object(j, "samples");
	SCHEMA(j, columns);
	json_begin_array(j, "data");
	uint64_t last = ts->start_ns;
	for (size_t i = 0; i < ts->n; i++) {
		const struct cs_profile_sample *s = &p->samples[ts->ids[i]];
		size_t row = stack_of(t, p, s->stack);
		for (uint64_t k = 0; k < s->weight; k++) {
			/* the later snapshots, a period apart, never
			 * before an earlier sample */
			uint64_t at = s->time_ns + k * ts->period_ns;
			last = at > last ? at : last;
			json_begin_array(j, NULL);
			if (row == SIZE_MAX)
				json_null(j, NULL);
			else
				json_int(j, NULL, (int64_t)row);
			json_decimal(j, NULL, (int64_t)(last - ts->start_ns),
				     6);
			json_null(j, NULL);
			json_end_array(j);
		}
	}
	json_end_array(j);
	json_end_object(j);
}

/* A marker's phase: an interval with a start and an end. */
#define PHASE_INTERVAL 1

static void write_state_marker(struct json *j, const struct thread_samples *ts,
			       size_t names, enum cs_profile_state state,
			       enum rv_wait_kind wait, uint64_t from,
			       uint64_t to)
{
	json_begin_array(j, NULL);
	json_int(j, NULL, (int64_t)(names + state));
	json_decimal(j, NULL, (int64_t)(from - ts->start_ns), 6);
	json_decimal(j, NULL, (int64_t)(to - ts->start_ns), 6);
	json_int(j, NULL, PHASE_INTERVAL);
	json_int(j, NULL, 0);
	json_begin_object(j, NULL);
	json_string(j, "type", "ThreadState");
	json_string(j, "state", cs_profile_state_key(state));
	if (state == CS_PROFILE_BLOCKED && rv_wait_kind_name(wait))
		json_string(j, "wait", rv_wait_kind_name(wait));
	json_end_object(j);
	json_end_array(j);
}

/* The thread's states as intervals: a run of samples in one state (and,
 * blocked, on one thing) is one marker, from its first sample to the end
 * of its last (weight periods on); a gap of more than two periods without
 * samples (states not kept, samples lost) ends it. names: the string
 * index of the first state's name (the names follow the functions'). */
static void write_markers(struct json *j, const struct cs_profile *p,
			  const struct thread_samples *ts, size_t names)
{
	static const char *const columns[] = {"name",  "startTime", "endTime",
					      "phase", "category",  "data"};
	json_begin_object(j, "markers");
	SCHEMA(j, columns);
	json_begin_array(j, "data");
	uint64_t from = 0, to = 0;
	enum cs_profile_state state = CS_PROFILE_RUNNING;
	enum rv_wait_kind wait = RV_WAIT_NONE;
	for (size_t i = 0; i < ts->n; i++) {
		const struct cs_profile_sample *s = &p->samples[ts->ids[i]];
		uint64_t end = s->time_ns + s->weight * ts->period_ns;
		bool same = i > 0 && s->state == state && s->wait == wait &&
			    s->time_ns <= to + 2 * ts->period_ns;
		if (same) {
			to = end > to ? end : to;
			continue;
		}
		if (i > 0)
			write_state_marker(j, ts, names, state, wait, from, to);
		from = s->time_ns > to ? s->time_ns : to;
		to = end > from ? end : from;
		state = s->state;
		wait = s->wait;
	}
	if (ts->n)
		write_state_marker(j, ts, names, state, wait, from, to);
	json_end_array(j);
	json_end_object(j);
}

static void write_stack_table(struct json *j, const struct tables *t)
{
	static const char *const columns[] = {"prefix", "frame"};
	json_begin_object(j, "stackTable");
	SCHEMA(j, columns);
	json_begin_array(j, "data");
	for (size_t i = 0; i < t->nnodes; i++) {
		json_begin_array(j, NULL);
		if (t->nodes[i].prefix == SIZE_MAX)
			json_null(j, NULL);
		else
			json_int(j, NULL, (int64_t)t->nodes[i].prefix);
		json_int(j, NULL, (int64_t)t->nodes[i].frame);
		json_end_array(j);
	}
	json_end_array(j);
	json_end_object(j);
}

static void write_frame_table(struct json *j, const struct cs_profile *p,
			      const struct tables *t)
{
	static const char *const columns[] = {"location",      "relevantForJS",
					      "innerWindowID", "implementation",
					      "line",          "column",
					      "category",      "subcategory"};
	json_begin_object(j, "frameTable");
	SCHEMA(j, columns);
	json_begin_array(j, "data");
	for (size_t i = 0; i < t->nframes; i++) {
		const struct cs_profile_frame *f = &p->frames[t->frames[i]];
		json_begin_array(j, NULL);
		json_int(j, NULL, (int64_t)t->string_of[f->function]);
		json_bool(j, NULL, false);
		json_null(j, NULL);
		json_null(j, NULL);
		if (f->line > 0)
			json_int(j, NULL, f->line);
		else
			json_null(j, NULL);
		json_null(j, NULL);
		json_int(j, NULL, category_of(f->kind));
		json_int(j, NULL, 0);
		json_end_array(j);
	}
	json_end_array(j);
	json_end_object(j);
}

/* The functions' locations, then the states' names (the markers'). */
static void write_string_table(struct json *j, const struct cs_profile *p,
			       struct tables *t)
{
	json_begin_array(j, "stringTable");
	for (size_t i = 0; i < t->nstrings && !t->failed; i++) {
		const struct cs_profile_function *f =
			&p->functions[t->strings[i]];
		if (!f->file) {
			json_string(j, NULL, f->name);
			continue;
		}
		size_t len = strlen(f->name) + strlen(f->file) + 4;
		char *loc = malloc(len);
		if (!loc) {
			t->failed = true;
			break;
		}
		snprintf(loc, len, "%s (%s)", f->name, f->file);
		json_string(j, NULL, loc);
		free(loc);
	}
	for (int st = 0; st < CS_PROFILE_NSTATES; st++)
		json_string(j, NULL, cs_profile_state_name(st));
	json_end_array(j);
}

static void write_thread(struct json *j, const struct cs_profile *p,
			 size_t thread, struct tables *t,
			 const struct thread_samples *ts, int64_t pid)
{
	const struct cs_profile_thread *th = &p->threads[thread];
	reset(t, p);
	json_begin_object(j, NULL);
	json_string(j, "name", cs_profile_display(p, th->label));
	json_string(j, "processType", "default");
	json_int(j, "tid", th->tid >= 0 ? th->tid : (int64_t)thread);
	json_int(j, "pid", pid);
	json_int(j, "registerTime", 0);
	json_null(j, "unregisterTime");
	write_samples(j, p, t, ts);
	/* every string a sample needs is known now: the states' come after */
	write_markers(j, p, ts, t->nstrings);
	write_stack_table(j, t);
	write_frame_table(j, p, t);
	write_string_table(j, p, t);
	json_end_object(j);
}

static void write_meta(struct json *j, const struct thread_samples *ts)
{
	/* the wall clock when the first sample was taken */
	struct timespec real, mono;
	clock_gettime(CLOCK_REALTIME, &real);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	uint64_t real_ns =
		(uint64_t)real.tv_sec * 1000000000ULL + (uint64_t)real.tv_nsec;
	uint64_t mono_ns =
		(uint64_t)mono.tv_sec * 1000000000ULL + (uint64_t)mono.tv_nsec;
	uint64_t ago = mono_ns > ts->start_ns ? mono_ns - ts->start_ns : 0;
	json_begin_object(j, "meta");
	json_int(j, "version", GECKO_VERSION);
	json_decimal(j, "interval", (int64_t)ts->period_ns, 6);
	json_decimal(j, "startTime", (int64_t)(real_ns - ago), 6);
	json_null(j, "shutdownTime");
	json_int(j, "processType", 0);
	json_string(j, "product", "corestack record (Ruby)");
	json_int(j, "stackwalk", 0);
	json_int(j, "debug", 0);
	json_int(j, "gcpoison", 0);
	json_int(j, "asyncstack", 0);
	/* frames are named already: nothing to symbolicate */
	json_bool(j, "presymbolicated", true);
	json_begin_array(j, "categories");
	for (size_t i = 0; i < sizeof(categories) / sizeof(*categories); i++) {
		json_begin_object(j, NULL);
		json_string(j, "name", categories[i].name);
		json_string(j, "color", categories[i].color);
		json_begin_array(j, "subcategories");
		json_string(j, NULL, "Other");
		json_end_array(j);
		json_end_object(j);
	}
	json_end_array(j);
	/* the ThreadState markers' fields, for the marker chart and table */
	json_begin_array(j, "markerSchema");
	json_begin_object(j, NULL);
	json_string(j, "name", "ThreadState");
	json_begin_array(j, "display");
	json_string(j, NULL, "marker-chart");
	json_string(j, NULL, "marker-table");
	json_string(j, NULL, "timeline-overview");
	json_end_array(j);
	json_string(j, "chartLabel", "{marker.data.state}");
	json_string(j, "tableLabel", "{marker.data.state} {marker.data.wait}");
	json_begin_array(j, "data");
	static const char *const fields[][2] = {{"state", "State"},
						{"wait", "Waiting on"}};
	for (size_t i = 0; i < 2; i++) {
		json_begin_object(j, NULL);
		json_string(j, "key", fields[i][0]);
		json_string(j, "label", fields[i][1]);
		json_string(j, "format", "string");
		json_end_object(j);
	}
	json_end_array(j);
	json_end_object(j);
	json_end_array(j);
	json_end_object(j);
}

void cs_profile_write_firefox(FILE *out, const struct cs_profile *p,
			      const struct cs_profile_run *run)
{
	struct tables t = {
		.string_of = malloc((p->nfunctions + 1) * sizeof(size_t)),
		.frame_of = malloc((p->nframes + 1) * sizeof(size_t)),
		.stack_of = malloc((p->nstacks + 1) * sizeof(size_t)),
	};
	size_t *ids = NULL, *first = NULL;
	bool ok = t.string_of && t.frame_of && t.stack_of &&
		  cs_profile_by_thread(p, &ids, &first);
	struct thread_samples ts = {
		.start_ns = p->nsamples ? p->samples[0].time_ns : 0,
		.period_ns = run->rate > 0 ? (uint64_t)(1e9 / run->rate) : 0,
	};
	if (ok) {
		memset(t.string_of, 0xff, (p->nfunctions + 1) * sizeof(size_t));
		memset(t.frame_of, 0xff, (p->nframes + 1) * sizeof(size_t));
		memset(t.stack_of, 0xff, (p->nstacks + 1) * sizeof(size_t));
		struct json j = {.out = out};
		json_begin_object(&j, NULL);
		write_meta(&j, &ts);
		json_begin_array(&j, "libs");
		json_end_array(&j);
		json_begin_array(&j, "pausedRanges");
		json_end_array(&j);
		json_begin_array(&j, "processes");
		json_end_array(&j);
		json_begin_array(&j, "threads");
		for (size_t i = 0; i < p->nthreads && !t.failed; i++) {
			ts.ids = ids + first[i];
			ts.n = first[i + 1] - first[i];
			if (ts.n)
				write_thread(&j, p, i, &t, &ts, run->pid);
		}
		json_end_array(&j);
		json_end_object(&j);
	}
	if (!ok || t.failed)
		fputs("corestack: could not write the Firefox profile\n",
		      stderr);
	u64map_free(&t.node_index, NULL);
	free(t.string_of);
	free(t.frame_of);
	free(t.stack_of);
	free(t.strings);
	free(t.frames);
	free(t.stacks);
	free(t.nodes);
	free(ids);
	free(first);
}
