/* The profile (profile/profile.c): stacks counted by their collapsed
 * line, and a thread whose frames carry the names_id of its last sample's
 * counted again without its frames being looked up. The counts must be
 * those of looking up every frame: a changed frame, thread name or tid, or
 * a frame without a names_id, is a new look at the strings. The tables
 * hold each function, frame, stack and thread once, and the samples'
 * weights add up to the lines' counts. Functions take the frames' stable
 * names. */
#include "profile/profile.h"
#include "profile/profile_format.h"
#include "tests/unit/check.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define DEPTH 3

struct fixture {
	struct rv_frame frames[DEPTH];
	struct rv_thread thread;
	struct rv_process proc;
};

static void make(struct fixture *f, const char *const names[DEPTH],
		 const uint64_t ids[DEPTH], const char *thread_name)
{
	memset(f, 0, sizeof(*f));
	for (int i = 0; i < DEPTH; i++) {
		f->frames[i].kind = RV_FRAME_RUBY;
		f->frames[i].label = (char *)names[i];
		f->frames[i].names_id = ids[i];
	}
	f->thread.addr = 0x1000;
	f->thread.tid = 42;
	f->thread.name = (char *)thread_name;
	f->thread.frames = f->frames;
	f->thread.nframes = DEPTH;
	f->proc.threads = &f->thread;
	f->proc.nthreads = 1;
}

/* The count of the collapsed line as the collapsed format writes it, 0
 * if absent. */
static size_t count_of(const struct cs_profile *p, const char *line)
{
	char *text = NULL;
	size_t size = 0, count = 0, len = strlen(line);
	FILE *out = open_memstream(&text, &size);
	if (!out)
		return 0;
	cs_profile_format_find("collapsed")->write(out, p, NULL);
	fclose(out);
	for (const char *l = text; l && *l; l = strchr(l, '\n') + 1)
		if (strncmp(l, line, len) == 0 && l[len] == ' ')
			count = strtoull(l + len + 1, NULL, 10);
	free(text);
	return count;
}

static uint64_t clock_ns;

static int add(struct cs_profile *p, const struct rv_process *proc)
{
	clock_ns += 10000000; /* 100 Hz */
	return cs_profile_add(p, proc, 0, clock_ns);
}

/* The samples' weights against the lines' counts. */
static int weights_add_up(const struct cs_profile *p)
{
	uint64_t weights = 0, counts = 0;
	for (size_t i = 0; i < p->nsamples; i++)
		weights += p->samples[i].weight;
	for (size_t i = 0; i < p->nline_slots; i++)
		counts += p->lines[i].count;
	return weights == counts;
}

/* The name of frame k (outermost first) of stack s. */
static const char *frame_name(const struct cs_profile *p, size_t s, size_t k)
{
	return p->names.text[cs_profile_frame_name(p, p->stacks[s].frames[k])];
}

/* The text a format writes of p. */
static char *written(const struct cs_profile *p, const char *format)
{
	char *text = NULL;
	size_t size = 0;
	struct cs_profile_run run = {.seconds = 1.0, .rate = 100};
	FILE *out = open_memstream(&text, &size);
	if (!out)
		return NULL;
	cs_profile_format_find(format)->write(out, p, &run);
	fclose(out);
	return text;
}

/* A thread's state: from the GVL, its status and the GC's flag; a sample
 * ends when the state (or what a blocked thread waits on) changes, so
 * each weight counts snapshots of one state; --state keeps only some. */
static void states(void)
{
	static const char *const abc[DEPTH] = {"c", "b", "a"};
	const uint64_t ids[DEPTH] = {3, 2, 1};
	struct cs_profile p;
	struct fixture f;
	make(&f, abc, ids, "w");
	struct rv_thread *t = &f.thread;
	struct rv_process *proc = &f.proc;
	t->state = RV_STATE_RUNNABLE;
	CHECK(cs_profile_state_of(proc, t) == CS_PROFILE_WAITING_GVL,
	      "runnable without the GVL waits for it");
	t->holds_gvl = true;
	CHECK(cs_profile_state_of(proc, t) == CS_PROFILE_RUNNING, "running");
	proc->gc.known = proc->gc.during_gc = true;
	CHECK(cs_profile_state_of(proc, t) == CS_PROFILE_GC, "gc");
	t->holds_gvl = false;
	CHECK(cs_profile_state_of(proc, t) == CS_PROFILE_WAITING_GVL,
	      "waiting while another thread collects");
	t->state = RV_STATE_SLEEPING_FOREVER;
	CHECK(cs_profile_state_of(proc, t) == CS_PROFILE_BLOCKED, "blocked");

	cs_profile_init(&p);
	proc->gc.during_gc = false;
	t->holds_gvl = true;
	t->state = RV_STATE_RUNNABLE;
	add(&p, proc); /* running */
	add(&p, proc);
	proc->gc.during_gc = true;
	add(&p, proc); /* gc */
	proc->gc.during_gc = false;
	t->holds_gvl = false;
	t->state = RV_STATE_SLEEPING;
	t->wait.kind = RV_WAIT_SLEEP;
	add(&p, proc); /* blocked on sleep */
	t->wait.kind = RV_WAIT_QUEUE;
	add(&p, proc); /* blocked on a queue */
	add(&p, proc);
	CHECK(p.nsamples == 4 && p.samples[0].weight == 2 &&
		      p.samples[0].state == CS_PROFILE_RUNNING &&
		      p.samples[1].state == CS_PROFILE_GC &&
		      p.samples[2].wait == RV_WAIT_SLEEP &&
		      p.samples[3].weight == 2 &&
		      p.samples[3].wait == RV_WAIT_QUEUE,
	      "a sample per state and wait: %zu", p.nsamples);
	CHECK(weights_add_up(&p), "weights and counts with states");
	char *summary = written(&p, "summary");
	CHECK(summary && strstr(summary, "33.3%            0.0%    50.0%    "
					 "16.7%  w (6 samples; blocked on "
					 "queue, sleep)"),
	      "summary's states: %s", summary ? summary : "none");
	free(summary);
	char *svg = written(&p, "flamegraph");
	CHECK(svg && strstr(svg, "[running] (2 samples)") &&
		      strstr(svg, "[blocked] (3 samples)") &&
		      strstr(svg, "[gc] (1 samples)"),
	      "flame graph's state boxes");
	free(svg);
	/* only some states */
	cs_profile_free(&p);
	cs_profile_init(&p);
	clock_ns += 10000000;
	cs_profile_add(&p, proc, 1u << CS_PROFILE_RUNNING, clock_ns);
	CHECK(p.nsamples == 0 && p.snapshots == 1, "a blocked thread left out");
	cs_profile_add(&p, proc, 1u << CS_PROFILE_BLOCKED, clock_ns);
	CHECK(p.nsamples == 1, "a blocked thread kept");
	cs_profile_free(&p);

	unsigned set;
	char why[160];
	CHECK(cs_profile_states_parse("running,gc", &set, why, sizeof(why)) &&
		      set == ((1u << CS_PROFILE_RUNNING) |
			      (1u << CS_PROFILE_GC)),
	      "a list of two");
	CHECK(!cs_profile_states_parse("running,sleeping", &set, why,
				       sizeof(why)) &&
		      strstr(why, "not 'sleeping'"),
	      "an unknown state: %s", why);
	CHECK(!cs_profile_states_parse("running,", &set, why, sizeof(why)),
	      "an empty item");
	CHECK(!strcmp(cs_profile_state_name(CS_PROFILE_WAITING_GVL),
		      "waiting for GVL") &&
		      !strcmp(cs_profile_state_key(CS_PROFILE_WAITING_GVL),
			      "waiting"),
	      "names");
}

/* A thread sampled before its kernel thread started (no tid), then before
 * Thread#name=, then after, is one thread under its name once settled;
 * another Ruby thread that had its tid is not, nor a renamed one. */
static void settling(void)
{
	static const char *const abc[DEPTH] = {"c", "b", "a"};
	static const uint64_t ids[DEPTH] = {1, 2, 3};
	struct cs_profile p;
	struct fixture f;
	cs_profile_init(&p);
	make(&f, abc, ids, NULL);
	f.thread.tid = -1;
	add(&p, &f.proc);
	make(&f, abc, ids, NULL);
	add(&p, &f.proc);
	make(&f, abc, ids, "late");
	for (int i = 0; i < 3; i++)
		add(&p, &f.proc);
	make(&f, abc, ids, NULL);
	f.thread.addr = 0x2000; /* a new thread, the tid reused */
	add(&p, &f.proc);
	CHECK(p.nthreads == 4 && count_of(&p, "thread 1;a;b;c") == 1 &&
		      count_of(&p, "thread 42;a;b;c") == 2,
	      "before: %zu threads", p.nthreads);
	CHECK(cs_profile_settle(&p), "settle");
	CHECK(p.nthreads == 2 && count_of(&p, "late;a;b;c") == 5 &&
		      count_of(&p, "thread 42;a;b;c") == 1 &&
		      !count_of(&p, "thread 1;a;b;c"),
	      "after: %zu threads, late %zu, thread 42 %zu", p.nthreads,
	      count_of(&p, "late;a;b;c"), count_of(&p, "thread 42;a;b;c"));
	CHECK(p.nsamples == 4 && p.samples[0].thread == 0 &&
		      p.samples[1].thread == 0 && p.samples[2].thread == 0 &&
		      p.samples[3].thread == 1 && p.threads[0].name &&
		      !strcmp(p.threads[0].name, "late"),
	      "samples' threads %zu %zu %zu %zu", p.samples[0].thread,
	      p.samples[1].thread, p.samples[2].thread, p.samples[3].thread);
	CHECK(weights_add_up(&p), "weights and counts, settled");
	char *ff = written(&p, "firefox");
	size_t tracks = 0;
	for (const char *t = ff; t && (t = strstr(t, "\"registerTime\"")); t++)
		tracks++;
	CHECK(tracks == 2, "firefox: %zu tracks for 2 threads", tracks);
	free(ff);
	/* Settled again: nothing more to merge, nothing changes. */
	CHECK(cs_profile_settle(&p) && p.nthreads == 2 &&
		      count_of(&p, "late;a;b;c") == 5,
	      "settled twice");
	cs_profile_free(&p);
	/* Renamed: two names, two threads. */
	cs_profile_init(&p);
	make(&f, abc, ids, "first");
	add(&p, &f.proc);
	make(&f, abc, ids, "second");
	add(&p, &f.proc);
	CHECK(cs_profile_settle(&p) && p.nthreads == 2 &&
		      count_of(&p, "first;a;b;c") == 1 &&
		      count_of(&p, "second;a;b;c") == 1,
	      "renamed: %zu threads", p.nthreads);
	cs_profile_free(&p);
}

/* A process's title is in its threads' labels once settled, its latest;
 * one set back to none leaves them bare, and the collapsed lines follow. */
static void titles(void)
{
	static const char *const abc[DEPTH] = {"c", "b", "a"};
	static const uint64_t ids[DEPTH] = {1, 2, 3};
	struct cs_profile p;
	struct fixture f;
	cs_profile_init(&p);
	p.pid = 7;
	make(&f, abc, ids, "w");
	add(&p, &f.proc);
	p.pid = 8;
	make(&f, abc, ids, "w");
	add(&p, &f.proc);
	CHECK(cs_profile_set_title(&p, 7, "old") &&
		      cs_profile_set_title(&p, 7, "worker 1") &&
		      cs_profile_set_title(&p, 8, "master") &&
		      cs_profile_set_title(&p, 8, NULL),
	      "titles set");
	CHECK(cs_profile_settle(&p) && p.nthreads == 2 &&
		      count_of(&p, "process 7 (worker 1): w;a;b;c") == 1 &&
		      count_of(&p, "process 8: w;a;b;c") == 1,
	      "titled labels: %s, %s",
	      cs_profile_display(&p, p.threads[0].label),
	      cs_profile_display(&p, p.threads[1].label));
	cs_profile_free(&p);
}

/* --- pprof: the file read back ------------------------------------------ */

static uint64_t varint_at(const uint8_t *b, size_t n, size_t *i)
{
	uint64_t v = 0;
	for (int shift = 0; *i < n && shift < 64; shift += 7) {
		uint8_t c = b[(*i)++];
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			break;
	}
	return v;
}

/* The next field of the message b[*i, n): its number, and for a
 * length-delimited one its bytes; false at the end or on a wire type
 * the profile does not use. */
static bool next_field(const uint8_t *b, size_t n, size_t *i, uint64_t *field,
		       const uint8_t **data, size_t *len, uint64_t *value)
{
	if (*i >= n)
		return false;
	uint64_t key = varint_at(b, n, i);
	*field = key >> 3;
	if ((key & 7) == 0) {
		*value = varint_at(b, n, i);
		*data = NULL;
		*len = 0;
		return true;
	}
	if ((key & 7) != 2)
		return false;
	*len = (size_t)varint_at(b, n, i);
	if (*len > n - *i)
		return false;
	*data = b + *i;
	*i += *len;
	return true;
}

/* The pprof writer's output, gunzipped; NULL on failure. */
static uint8_t *pprof_bytes(const struct cs_profile *p, size_t *n)
{
	char *gz = NULL;
	size_t gz_len = 0;
	FILE *out = open_memstream(&gz, &gz_len);
	if (!out)
		return NULL;
	struct cs_profile_run run = {.seconds = 1, .rate = 100};
	cs_profile_format_find("pprof")->write(out, p, &run);
	fclose(out);
	size_t cap = 1 << 20;
	uint8_t *raw = malloc(cap);
	z_stream z = {.next_in = (Bytef *)gz,
		      .avail_in = (uInt)gz_len,
		      .next_out = raw,
		      .avail_out = (uInt)cap};
	bool ok = raw && inflateInit2(&z, 15 + 32) == Z_OK &&
		  inflate(&z, Z_FINISH) == Z_STREAM_END;
	inflateEnd(&z);
	free(gz);
	*n = z.total_out;
	if (!ok) {
		free(raw);
		return NULL;
	}
	return raw;
}

/* A snapshot of a thread that runs no Ruby frame (a program starting or
 * ending) is a sample with a location, "(no Ruby frame)": pprof drops a
 * sample without one, and the samples would not add up to the
 * snapshots. */
static void pprof_without_frames(void)
{
	static const char *const abc[DEPTH] = {"c", "b", "a"};
	const uint64_t ids[DEPTH] = {3, 2, 1};
	struct cs_profile p;
	struct fixture f;
	cs_profile_init(&p);
	make(&f, abc, ids, "w");
	add(&p, &f.proc);
	f.thread.nframes = 0;
	add(&p, &f.proc);
	add(&p, &f.proc);
	CHECK(cs_profile_settle(&p), "settled");
	size_t n = 0;
	uint8_t *b = pprof_bytes(&p, &n);
	CHECK(b != NULL, "the pprof file inflates");
	uint64_t field, value, total = 0, without = 0, named = 0;
	uint64_t no_frame_string = 0, nstrings = 0, functions_named = 0;
	const uint8_t *data;
	size_t len, i = 0;
	/* the string table first: which index is the name */
	while (b && next_field(b, n, &i, &field, &data, &len, &value)) {
		if (field != 6)
			continue;
		if (len == strlen("(no Ruby frame)") &&
		    memcmp(data, "(no Ruby frame)", len) == 0)
			no_frame_string = nstrings;
		nstrings++;
	}
	for (i = 0; b && next_field(b, n, &i, &field, &data, &len, &value);) {
		size_t j = 0, k;
		const uint8_t *d;
		size_t dl;
		uint64_t f2, v2;
		if (field == 5) /* Function: 2 its name */
			while (next_field(data, len, &j, &f2, &d, &dl, &v2))
				functions_named += f2 == 2 && no_frame_string &&
						   v2 == no_frame_string;
		if (field != 2) /* Sample: 1 location ids, 2 values */
			continue;
		bool located = false;
		while (next_field(data, len, &j, &f2, &d, &dl, &v2)) {
			located |= f2 == 1 && dl > 0;
			if (f2 == 2 && dl) {
				k = 0;
				total += varint_at(d, dl, &k);
			}
		}
		without += !located;
		named += located;
	}
	CHECK(total == 3 && without == 0 && named == 2,
	      "pprof samples: %llu in all, %llu without a location",
	      (unsigned long long)total, (unsigned long long)without);
	CHECK(functions_named == 1, "one function named (no Ruby frame): %llu",
	      (unsigned long long)functions_named);
	free(b);
	cs_profile_free(&p);
}

int main(void)
{
	static const char *const abc[DEPTH] = {"c", "b", "a"};
	static const char *const abd[DEPTH] = {"d", "b", "a"};
	/* ids promise names: 3 is always "c", 4 "d", 5 "c" again */
	const uint64_t ids[DEPTH] = {3, 2, 1}, moved[DEPTH] = {4, 2, 1},
		       again[DEPTH] = {5, 2, 1}, none[DEPTH] = {0, 2, 1};
	struct cs_profile p;
	struct fixture f;
	cs_profile_init(&p);

	make(&f, abc, ids, "w");
	for (int i = 0; i < 3; i++)
		CHECK(add(&p, &f.proc), "add %d", i);
	CHECK(count_of(&p, "w;a;b;c") == 3, "the same stack 3 times: %zu",
	      count_of(&p, "w;a;b;c"));
	/* Tables: each thing once, outermost frame first, one sample of
	 * weight 3 from the first snapshot's time. */
	CHECK(p.nfunctions == 3 && p.nframes == 3 && p.nstacks == 1 &&
		      p.nthreads == 1,
	      "tables %zu %zu %zu %zu", p.nfunctions, p.nframes, p.nstacks,
	      p.nthreads);
	CHECK(p.stacks[0].nframes == 3 && !strcmp(frame_name(&p, 0, 0), "a") &&
		      !strcmp(frame_name(&p, 0, 2), "c"),
	      "stack order");
	const struct cs_profile_frame *c = &p.frames[p.stacks[0].frames[2]];
	CHECK(c->kind == CS_PROFILE_RUBY &&
		      !strcmp(p.functions[c->function].name, "c"),
	      "frame kind and function");
	CHECK(p.nsamples == 1 && p.samples[0].weight == 3 &&
		      p.samples[0].time_ns == 10000000 &&
		      p.samples[0].stack == 0 && p.samples[0].thread == 0,
	      "one sample of weight 3: %zu", p.nsamples);
	/* speedscope weighs it from its first snapshot to its last */
	CHECK(p.samples[0].last_ns == 30000000 && p.samples[0].snapshot == 0,
	      "first snapshot %zu, last seen at %llu", p.samples[0].snapshot,
	      (unsigned long long)p.samples[0].last_ns);
	CHECK(!strcmp(p.names.text[p.threads[0].label], "w") &&
		      p.threads[0].tid == 42,
	      "thread");

	/* A new id for the innermost frame, with other names: its own line. */
	make(&f, abd, moved, "w");
	add(&p, &f.proc);
	CHECK(count_of(&p, "w;a;b;d") == 1 && count_of(&p, "w;a;b;c") == 3,
	      "a changed frame counts apart");

	/* The same names under other ids (decoded again): the same line. */
	make(&f, abc, again, "w");
	add(&p, &f.proc);
	CHECK(count_of(&p, "w;a;b;c") == 4, "same names, new ids: %zu",
	      count_of(&p, "w;a;b;c"));
	CHECK(p.nstacks == 2 && p.nsamples == 3 && p.samples[2].stack == 0,
	      "back to the first stack: a new sample of it");

	/* A C function: no file or line of its own; the same name at
	 * another line is another frame of one function, on one line. */
	make(&f, abc, none, "w");
	f.frames[0].kind = RV_FRAME_CFUNC;
	f.frames[0].path = "caller.rb";
	f.frames[0].lineno = 7;
	f.frames[1].path = "b.rb";
	f.frames[1].lineno = 3;
	add(&p, &f.proc);
	f.frames[1].lineno = 4;
	add(&p, &f.proc);
	size_t s = p.samples[p.nsamples - 1].stack;
	const struct cs_profile_frame *inner = &p.frames[p.stacks[s].frames[2]],
				      *mid = &p.frames[p.stacks[s].frames[1]];
	CHECK(inner->kind == CS_PROFILE_CFUNC && inner->line == 0 &&
		      !p.functions[inner->function].file,
	      "a C function has no file or line");
	CHECK(mid->line == 4 &&
		      !strcmp(p.functions[mid->function].file, "b.rb") &&
		      p.stacks[p.samples[p.nsamples - 2].stack].frames[1] !=
			      p.stacks[s].frames[1] &&
		      p.frames[p.stacks[p.samples[p.nsamples - 2].stack]
				       .frames[1]]
				      .function == mid->function,
	      "lines 3 and 4 of b: two frames of one function");
	CHECK(count_of(&p, "w;a;b;c") == 6, "still one line: %zu",
	      count_of(&p, "w;a;b;c"));

	/* A function is named by its frame's stable name, never by the
	 * qualified one that holds an address. */
	make(&f, abc, none, "w");
	f.frames[0].qualified = "#<Class:0x00007f8cc3d04880>#c";
	f.frames[0].stable = "#<anonymous subclass of Foo>#c";
	add(&p, &f.proc);
	CHECK(count_of(&p, "w;a;b;#<anonymous subclass of Foo>#c") == 1,
	      "the stable name names the function");

	/* Frames without an id are never matched by id: their strings say. */
	make(&f, abd, none, "w");
	add(&p, &f.proc);
	add(&p, &f.proc);
	CHECK(count_of(&p, "w;a;b;d") == 3, "no ids: %zu",
	      count_of(&p, "w;a;b;d"));

	/* The thread renamed, with the same frames and ids: a new line. */
	make(&f, abc, ids, "w");
	add(&p, &f.proc);
	make(&f, abc, ids, "renamed");
	add(&p, &f.proc);
	CHECK(count_of(&p, "renamed;a;b;c") == 1, "renamed thread");
	f.thread.name = NULL;
	add(&p, &f.proc);
	CHECK(count_of(&p, "thread 42;a;b;c") == 1, "thread without a name");
	f.thread.tid = 43;
	add(&p, &f.proc);
	CHECK(count_of(&p, "thread 43;a;b;c") == 1, "another tid");

	/* Many distinct stacks make the table grow: a remembered slot must
	 * not be used after it moved. */
	static char names[600][16];
	make(&f, abc, ids, "w");
	add(&p, &f.proc);
	for (int i = 0; i < 600; i++) {
		struct fixture g;
		snprintf(names[i], sizeof(names[i]), "m%d", i);
		const char *const n[DEPTH] = {names[i], "b", "a"};
		const uint64_t gid[DEPTH] = {100 + (uint64_t)i, 2, 1};
		make(&g, n, gid, "other");
		g.thread.addr = 0x2000;
		add(&p, &g.proc);
	}
	add(&p, &f.proc);
	CHECK(count_of(&p, "w;a;b;c") == 9, "after the table grew: %zu",
	      count_of(&p, "w;a;b;c"));
	CHECK(p.snapshots == 616, "snapshots %zu", p.snapshots);

	/* Threads come and go: memos of gone ones do not pile up, and the
	 * counts stay right. */
	for (int i = 0; i < 300; i++) {
		make(&f, abc, ids, "w");
		f.thread.addr = 0x10000 + (uint64_t)i * 0x100;
		add(&p, &f.proc);
		add(&p, &f.proc);
	}
	CHECK(p.nmemos <= 66, "%zu memos for one live thread", p.nmemos);
	CHECK(count_of(&p, "w;a;b;c") == 609, "after 300 threads: %zu",
	      count_of(&p, "w;a;b;c"));
	/* The same names_id with the line moved: the same collapsed line,
	 * the sample in a stack at the new line (as looking every frame up
	 * gives), and a line that stays makes that sample weigh more. */
	make(&f, abc, ids, "w");
	f.frames[0].lineno = 10;
	add(&p, &f.proc);
	f.frames[0].lineno = 11;
	add(&p, &f.proc);
	add(&p, &f.proc);
	const struct cs_profile_sample *at11 = &p.samples[p.nsamples - 1],
				       *at10 = &p.samples[p.nsamples - 2];
	const struct cs_profile_frame *c11 =
		&p.frames[p.stacks[at11->stack].frames[2]];
	const struct cs_profile_frame *c10 =
		&p.frames[p.stacks[at10->stack].frames[2]];
	CHECK(c11->line == 11 && c10->line == 10 &&
		      c11->function == c10->function && at11->weight == 2 &&
		      at10->weight == 1,
	      "moved line: %d %d, weights %llu %llu", c11->line, c10->line,
	      (unsigned long long)at11->weight,
	      (unsigned long long)at10->weight);
	CHECK(count_of(&p, "w;a;b;c") == 612, "after the moves: %zu",
	      count_of(&p, "w;a;b;c"));
	CHECK(weights_add_up(&p), "weights and counts");
	cs_profile_free(&p);

	/* Processes followed together: a forked child has its parent's
	 * thread at the same address, and without a tid the same label; the
	 * pid keeps them apart, in the tables and in the lines. */
	cs_profile_init(&p);
	make(&f, abc, ids, NULL);
	f.thread.tid = -1;
	for (int i = 0; i < 4; i++) {
		p.pid = i % 2 ? 200 : 100;
		CHECK(add(&p, &f.proc), "add in process %lld",
		      (long long)p.pid);
	}
	CHECK(count_of(&p, "process 100: thread 1;a;b;c") == 2 &&
		      count_of(&p, "process 200: thread 1;a;b;c") == 2,
	      "two processes: %zu %zu",
	      count_of(&p, "process 100: thread 1;a;b;c"),
	      count_of(&p, "process 200: thread 1;a;b;c"));
	CHECK(p.nthreads == 2 && p.threads[0].pid == 100 &&
		      p.threads[1].pid == 200,
	      "%zu threads", p.nthreads);
	CHECK(weights_add_up(&p), "weights and counts, two processes");
	/* each process's thread in one stack in each of its snapshots: one
	 * sample growing, whatever was sampled between them */
	CHECK(p.nsamples == 2 && p.samples[0].weight == 2 &&
		      p.samples[1].weight == 2 && p.samples[1].snapshot == 0,
	      "%zu samples, weights %llu", p.nsamples,
	      (unsigned long long)p.samples[0].weight);
	/* a snapshot that lists no thread (a Ruby starting): counted as
	 * such, of its own process, and no sample */
	struct rv_process threadless = {0};
	p.pid = 200;
	CHECK(add(&p, &threadless) && p.nsamples == 2 && p.snapshots == 5 &&
		      cs_profile_threadless(&p, 200) == 1 &&
		      cs_profile_threadless(&p, 100) == 0 &&
		      cs_profile_threadless(&p, 300) == 0,
	      "threadless: %zu samples, %zu in 200", p.nsamples,
	      cs_profile_threadless(&p, 200));
	cs_profile_free(&p);
	states();
	settling();
	titles();
	pprof_without_frames();
	return check_summary("test_profile");
}
