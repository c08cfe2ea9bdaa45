/* pprof's profile.proto, gzipped: what go tool pprof, Pyroscope, Parca and
 * Grafana read. Functions (name, file), locations (one per distinct
 * function and line), samples (locations innermost first, values
 * "samples" and "wall" nanoseconds, labels thread, thread_id, state (a
 * --state key), ractor (its number; none on Ruby 2.7), for a blocked
 * thread wait (what it waits on), and pid when several processes are
 * followed). A sample of a thread that ran no Ruby frame (starting, or
 * after the program's end) has one location, the function NO_RUBY_FRAME:
 * pprof drops a sample without locations, and its count would not add
 * up to the snapshots taken.
 *
 * Field numbers are profile.proto's (github.com/google/pprof, proto/
 * profile.proto): Profile 1 sample_type, 2 sample, 4 location, 5
 * function, 6 string_table, 9 time_nanos, 10 duration_nanos, 11
 * period_type, 12 period; ValueType 1 type, 2 unit; Sample 1 location_id,
 * 2 value, 3 label; Label 1 key, 2 str, 3 num; Location 1 id, 4 line; Line
 * 1 function_id, 2 line; Function 1 id, 2 name, 3 system_name, 4
 * filename. */
#include "profile_format.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "../util/protobuf.h"
#include "../util/u64map.h"

/* The string table: each distinct string once, "" first. */
struct strings {
	struct pb_buf *out;  /* the Profile: entries go straight to it */
	struct u64map index; /* hash -> index + 1 */
	const char **text; /* entry i, for telling strings of one hash apart */
	size_t count;
};

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h ? h : 1;
}

/* The index of s, added to the table when new. A string whose hash
 * another one took is added again: the table may hold it twice. */
static uint64_t string_id(struct strings *t, const char *s)
{
	uint64_t h = hash(s);
	int found = 0;
	uintptr_t v = (uintptr_t)u64map_get(&t->index, h, &found);
	if (found && strcmp(t->text[v - 1], s) == 0)
		return v - 1;
	pb_string(t->out, 6, s);
	t->text[t->count] = s;
	if (!found)
		u64map_put(&t->index, h, (void *)(uintptr_t)(t->count + 1));
	return t->count++;
}

static void value_type(struct pb_buf *out, uint32_t field, uint64_t type,
		       uint64_t unit)
{
	struct pb_buf m = {0};
	pb_varint(&m, 1, type);
	pb_varint(&m, 2, unit);
	pb_message(out, field, &m);
	pb_free(&m);
}

static void label(struct pb_buf *sample, uint64_t key, uint64_t str,
		  int64_t num)
{
	struct pb_buf m = {0};
	pb_varint(&m, 1, key);
	if (str)
		pb_varint(&m, 2, str);
	else
		pb_varint(&m, 3, (uint64_t)num);
	pb_message(sample, 3, &m);
	pb_free(&m);
}

#define NO_RUBY_FRAME "(no Ruby frame)"

/* The ids of the strings every message refers to. */
struct ids {
	uint64_t *fn_name, *fn_file, *thread_label;
	uint64_t samples, count, wall, nanoseconds, thread, thread_id, pid;
	uint64_t state, ractor, wait, no_ruby_frame;
	uint64_t state_key[CS_PROFILE_NSTATES], wait_name[RV_WAIT_PROCESS + 1];
};

static bool collect_strings(const struct cs_profile *p, struct strings *t,
			    struct ids *ids)
{
	/* at most: "", the eleven names below, two per function, one per
	 * thread, state and kind of wait */
	t->text = calloc(12 + 2 * p->nfunctions + p->nthreads +
				 CS_PROFILE_NSTATES + RV_WAIT_PROCESS + 1,
			 sizeof(*t->text));
	ids->fn_name = calloc(p->nfunctions + 1, sizeof(*ids->fn_name));
	ids->fn_file = calloc(p->nfunctions + 1, sizeof(*ids->fn_file));
	ids->thread_label = calloc(p->nthreads + 1, sizeof(*ids->thread_label));
	if (!t->text || !ids->fn_name || !ids->fn_file || !ids->thread_label)
		return false;
	string_id(t, "");
	ids->samples = string_id(t, "samples");
	ids->count = string_id(t, "count");
	ids->wall = string_id(t, "wall");
	ids->nanoseconds = string_id(t, "nanoseconds");
	ids->thread = string_id(t, "thread");
	ids->thread_id = string_id(t, "thread_id");
	ids->state = string_id(t, "state");
	ids->ractor = string_id(t, "ractor");
	ids->wait = string_id(t, "wait");
	for (int i = 0; i < CS_PROFILE_NSTATES; i++)
		ids->state_key[i] = string_id(t, cs_profile_state_key(i));
	for (int k = RV_WAIT_NONE; k <= RV_WAIT_PROCESS; k++)
		ids->wait_name[k] = rv_wait_kind_name(k)
					    ? string_id(t, rv_wait_kind_name(k))
					    : 0;
	ids->pid = string_id(t, "pid");
	ids->no_ruby_frame = string_id(t, NO_RUBY_FRAME);
	for (size_t i = 0; i < p->nfunctions; i++) {
		const struct cs_profile_function *f = &p->functions[i];
		ids->fn_name[i] = string_id(t, f->name);
		ids->fn_file[i] = string_id(t, f->file ? f->file : "");
	}
	for (size_t i = 0; i < p->nthreads; i++)
		ids->thread_label[i] = string_id(
			t, cs_profile_display(p, p->threads[i].label));
	return true;
}

/* Does a sample show a thread that ran no Ruby frame? */
static bool any_without_frames(const struct cs_profile *p)
{
	for (size_t i = 0; i < p->nsamples; i++)
		if (!p->stacks[p->samples[i].stack].nframes)
			return true;
	return false;
}

/* Functions 1..nfunctions, and NO_RUBY_FRAME's after them when used. */
static void write_functions(struct pb_buf *out, const struct cs_profile *p,
			    const struct ids *ids, bool no_frames)
{
	struct pb_buf m = {0};
	for (size_t i = 0; i < p->nfunctions + no_frames; i++) {
		pb_reset(&m);
		pb_varint(&m, 1, i + 1);
		if (i == p->nfunctions) {
			pb_varint(&m, 2, ids->no_ruby_frame);
			pb_message(out, 5, &m);
			break;
		}
		pb_varint(&m, 2, ids->fn_name[i]);
		/* No system_name: pprof takes a name equal to it for one to
		 * demangle, and cuts what is in <> and () from those that
		 * look like C++, leaving "<main>" empty and "block in <main>"
		 * "block in ". A Ruby method has no other name. */
		pb_varint(&m, 4, ids->fn_file[i]);
		pb_message(out, 5, &m);
	}
	pb_free(&m);
}

/* One location per frame of the profile: a function at a line; then,
 * when used, NO_RUBY_FRAME's (its function after the others). */
static void write_locations(struct pb_buf *out, const struct cs_profile *p,
			    bool no_frames)
{
	struct pb_buf m = {0}, line = {0};
	for (size_t i = 0; i < p->nframes + no_frames; i++) {
		pb_reset(&m);
		pb_reset(&line);
		pb_varint(&line, 1,
			  i == p->nframes ? p->nfunctions + 1
					  : p->frames[i].function + 1);
		if (i < p->nframes && p->frames[i].line > 0)
			pb_varint(&line, 2, (uint64_t)p->frames[i].line);
		pb_varint(&m, 1, i + 1);
		pb_message(&m, 4, &line);
		pb_message(out, 4, &m);
	}
	pb_free(&m);
	pb_free(&line);
}

static void write_samples(struct pb_buf *out, const struct cs_profile *p,
			  const struct ids *ids, uint64_t period_ns)
{
	struct pb_buf m = {0};
	uint64_t *locs = NULL;
	size_t cap = 0;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct cs_profile_sample *s = &p->samples[i];
		const struct cs_profile_stack *st = &p->stacks[s->stack];
		size_t n = st->nframes ? st->nframes : 1;
		if (n > cap) {
			uint64_t *grown = realloc(locs, n * sizeof(*locs));
			if (!grown) {
				out->failed = true;
				break;
			}
			locs = grown;
			cap = n;
		}
		/* pprof lists a sample's locations innermost first */
		for (size_t j = 0; j < st->nframes; j++)
			locs[j] = st->frames[st->nframes - 1 - j] + 1;
		if (!st->nframes) /* NO_RUBY_FRAME's location */
			locs[0] = p->nframes + 1;
		uint64_t values[2] = {s->weight, s->weight * period_ns};
		const struct cs_profile_thread *th = &p->threads[s->thread];
		pb_reset(&m);
		pb_packed(&m, 1, locs, n);
		pb_packed(&m, 2, values, 2);
		label(&m, ids->thread, ids->thread_label[s->thread], 0);
		if (th->tid >= 0)
			label(&m, ids->thread_id, 0, th->tid);
		label(&m, ids->state,
		      ids->state_key[s->state % CS_PROFILE_NSTATES], 0);
		if (th->ractor)
			label(&m, ids->ractor, 0, th->ractor);
		if (s->wait <= RV_WAIT_PROCESS && ids->wait_name[s->wait])
			label(&m, ids->wait, ids->wait_name[s->wait], 0);
		if (th->pid)
			label(&m, ids->pid, 0, th->pid);
		pb_message(out, 2, &m);
	}
	free(locs);
	pb_free(&m);
}

/* data, gzipped, to out; false on failure. */
static bool write_gzip(FILE *out, const uint8_t *data, size_t len)
{
	z_stream z = {0};
	/* 15 + 16: a gzip header and trailer, as pprof expects */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return false;
	uint8_t buf[65536];
	z.next_in = (Bytef *)data;
	z.avail_in = (uInt)len;
	int rc;
	bool ok = len <= UINT_MAX;
	do {
		z.next_out = buf;
		z.avail_out = sizeof(buf);
		rc = deflate(&z, Z_FINISH);
		size_t n = sizeof(buf) - z.avail_out;
		/* deflate wrote those n bytes */
		// cppcheck-suppress uninitvar
		if (n && fwrite(buf, 1, n, out) != n)
			ok = false;
	} while (ok && rc == Z_OK);
	deflateEnd(&z);
	return ok && rc == Z_STREAM_END;
}

void cs_profile_write_pprof(FILE *out, const struct cs_profile *p,
			    const struct cs_profile_run *run)
{
	struct pb_buf prof = {0};
	struct strings t = {.out = &prof};
	struct ids ids = {0};
	uint64_t period_ns = run->rate > 0 ? (uint64_t)(1e9 / run->rate) : 0;
	bool collected = collect_strings(p, &t, &ids);
	if (collected) {
		value_type(&prof, 1, ids.samples, ids.count);
		value_type(&prof, 1, ids.wall, ids.nanoseconds);
		bool no_frames = any_without_frames(p);
		write_samples(&prof, p, &ids, period_ns);
		write_locations(&prof, p, no_frames);
		write_functions(&prof, p, &ids, no_frames);
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		uint64_t wall_now = (uint64_t)now.tv_sec * 1000000000ULL +
				    (uint64_t)now.tv_nsec;
		uint64_t duration = (uint64_t)(run->seconds * 1e9);
		pb_varint(&prof, 9,
			  wall_now > duration ? wall_now - duration : wall_now);
		pb_varint(&prof, 10, duration);
		value_type(&prof, 11, ids.wall, ids.nanoseconds);
		pb_varint(&prof, 12, period_ns);
	}
	if (prof.failed || !collected || !write_gzip(out, prof.data, prof.len))
		fputs("corestack: could not write the pprof profile\n", stderr);
	free(t.text);
	free(ids.fn_name);
	free(ids.fn_file);
	free(ids.thread_label);
	u64map_free(&t.index, NULL);
	pb_free(&prof);
}
