/* The profile's tables (profile.h): each thread's stack of a snapshot
 * looked up in them, the sample recorded, and counted in its line. */
#include "profile.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FNV_OFFSET 14695981039346656037ULL
#define FNV_PRIME 1099511628211ULL

struct cs_profile_slot {
	uint64_t hash;
	size_t id; /* id + 1; 0: empty */
};

void cs_profile_init(struct cs_profile *p)
{
	memset(p, 0, sizeof(*p));
}

/* FNV-1a of s, written as names write it (';' as ':'), after h. */
static uint64_t hash_text(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (uint8_t)(*s == ';' ? ':' : *s)) * FNV_PRIME;
	return h;
}

/* A collapsed line's hash, one frame further: ';' and the frame's name. */
static uint64_t hash_frame(uint64_t h, const char *name)
{
	return hash_text((h ^ (uint8_t)';') * FNV_PRIME, name);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h = (h ^ v) * FNV_PRIME;
	return h ^ (h >> 32);
}

static bool same_text(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* Is name the text of raw as names write it? */
static bool same_display(const char *name, const char *raw)
{
	for (; *raw; raw++, name++)
		if (*name != (*raw == ';' ? ':' : *raw))
			return false;
	return !*name;
}

/* Room for one entry more in a table of n: the capacity doubles at 16,
 * 32, 64... entries. NULL on allocation failure (table kept). */
static void *room(void *table, size_t n, size_t size)
{
	if (n && (n < 16 || (n & (n - 1))))
		return table;
	return reallocarray(table, n < 16 ? 16 : 2 * n, size);
}

/* Does entry id of a table hold key? */
typedef bool (*same_fn)(const struct cs_profile *p, size_t id, const void *key);

static size_t index_find(const struct cs_profile *p,
			 const struct cs_profile_index *x, uint64_t hash,
			 same_fn same, const void *key)
{
	for (size_t i = hash & (x->nslots - 1); x->nslots;
	     i = (i + 1) & (x->nslots - 1)) {
		const struct cs_profile_slot *s = &x->slots[i];
		if (!s->id)
			break;
		if (s->hash == hash && same(p, s->id - 1, key))
			return s->id - 1;
	}
	return SIZE_MAX;
}

static void index_put(struct cs_profile_slot *slots, size_t n, uint64_t hash,
		      size_t id1)
{
	size_t i = hash & (n - 1);
	while (slots[i].id)
		i = (i + 1) & (n - 1);
	slots[i] = (struct cs_profile_slot){hash, id1};
}

/* Index id, not in x yet, under hash; 0 on allocation failure. */
static int index_add(struct cs_profile_index *x, uint64_t hash, size_t id)
{
	if ((x->count + 1) * 2 > x->nslots) {
		size_t n = x->nslots ? x->nslots * 2 : 64;
		struct cs_profile_slot *slots = calloc(n, sizeof(*slots));
		if (!slots)
			return 0;
		for (size_t i = 0; i < x->nslots; i++)
			if (x->slots[i].id)
				index_put(slots, n, x->slots[i].hash,
					  x->slots[i].id);
		free(x->slots);
		x->slots = slots;
		x->nslots = n;
	}
	index_put(x->slots, x->nslots, hash, id + 1);
	x->count++;
	return 1;
}

static bool same_name(const struct cs_profile *p, size_t id, const void *key)
{
	return same_display(p->names.text[id], key);
}

/* The id of raw's name, added when new; SIZE_MAX on allocation failure. */
static size_t name_id(struct cs_profile *p, const char *raw)
{
	uint64_t h = hash_text(FNV_OFFSET, raw);
	size_t id = index_find(p, &p->name_index, h, same_name, raw);
	if (id != SIZE_MAX)
		return id;
	char **text = room(p->names.text, p->names.count, sizeof(*text));
	char *copy = strdup(raw);
	if (text)
		p->names.text = text;
	if (!text || !copy || !index_add(&p->name_index, h, p->names.count)) {
		free(copy);
		return SIZE_MAX;
	}
	for (char *c = copy; *c; c++)
		if (*c == ';')
			*c = ':';
	text[p->names.count] = copy;
	return p->names.count++;
}

struct function_key {
	const char *name, *file;
};

static bool same_function(const struct cs_profile *p, size_t id,
			  const void *key)
{
	const struct function_key *k = key;
	const struct cs_profile_function *f = &p->functions[id];
	return strcmp(f->name, k->name) == 0 && same_text(f->file, k->file);
}

static size_t function_id(struct cs_profile *p, const char *name,
			  const char *file)
{
	struct function_key k = {name, file};
	uint64_t h = mix(hash_text(FNV_OFFSET, name), 0);
	h = file ? hash_text(h, file) : h;
	size_t id = index_find(p, &p->function_index, h, same_function, &k);
	if (id != SIZE_MAX)
		return id;
	struct cs_profile_function *t =
		room(p->functions, p->nfunctions, sizeof(*t));
	if (!t)
		return SIZE_MAX;
	p->functions = t;
	struct cs_profile_function f = {.name = strdup(name),
					.file = file ? strdup(file) : NULL,
					.display = name_id(p, name)};
	if (!f.name || (file && !f.file) || f.display == SIZE_MAX ||
	    !index_add(&p->function_index, h, p->nfunctions)) {
		free(f.name);
		free(f.file);
		return SIZE_MAX;
	}
	t[p->nfunctions] = f;
	return p->nfunctions++;
}

static bool same_frame(const struct cs_profile *p, size_t id, const void *key)
{
	const struct cs_profile_frame *k = key, *f = &p->frames[id];
	return f->function == k->function && f->line == k->line &&
	       f->kind == k->kind;
}

/* A C function's frame carries its caller's file and line (as Ruby shows
 * it): the function has none of its own. */
static int line_of(const struct rv_frame *f)
{
	return f->kind == RV_FRAME_CFUNC ? 0 : f->lineno;
}

static size_t frame_of(struct cs_profile *p, struct cs_profile_frame k)
{
	uint64_t h =
		mix(mix(mix(FNV_OFFSET, k.function), (uint64_t)k.line), k.kind);
	size_t id = index_find(p, &p->frame_index, h, same_frame, &k);
	if (id != SIZE_MAX)
		return id;
	struct cs_profile_frame *t = room(p->frames, p->nframes, sizeof(*t));
	if (!t)
		return SIZE_MAX;
	p->frames = t;
	if (!index_add(&p->frame_index, h, p->nframes))
		return SIZE_MAX;
	t[p->nframes] = k;
	return p->nframes++;
}

static size_t frame_id(struct cs_profile *p, const struct rv_frame *f)
{
	bool c = f->kind == RV_FRAME_CFUNC;
	/* stable: one method, one name in every process */
	const char *name = f->stable ? f->stable : f->label ? f->label : "?";
	struct cs_profile_frame k = {
		.function = function_id(p, name, c ? NULL : f->path),
		.line = line_of(f),
		.kind = c ? CS_PROFILE_CFUNC : CS_PROFILE_RUBY,
	};
	return k.function == SIZE_MAX ? SIZE_MAX : frame_of(p, k);
}

static bool same_stack(const struct cs_profile *p, size_t id, const void *key)
{
	const struct cs_profile_stack *k = key, *s = &p->stacks[id];
	return s->nframes == k->nframes &&
	       (!k->nframes || memcmp(s->frames, k->frames,
				      k->nframes * sizeof(*k->frames)) == 0);
}

/* Room for n frames in p->scratch and p->hashes. */
static bool scratch_for(struct cs_profile *p, size_t n)
{
	if (n <= p->scratch_cap)
		return true;
	size_t *s = reallocarray(p->scratch, n, sizeof(*s));
	if (s)
		p->scratch = s;
	uint64_t *h = reallocarray(p->hashes, n, sizeof(*h));
	if (h)
		p->hashes = h;
	if (!s || !h)
		return false;
	p->scratch_cap = n;
	return true;
}

/* The stack of the n frame ids in p->scratch, outermost first. */
static size_t stack_of(struct cs_profile *p, size_t n)
{
	uint64_t h = mix(FNV_OFFSET, n);
	for (size_t j = 0; j < n; j++)
		h = mix(h, p->scratch[j]);
	struct cs_profile_stack k = {p->scratch, n};
	size_t id = index_find(p, &p->stack_index, h, same_stack, &k);
	if (id != SIZE_MAX)
		return id;
	struct cs_profile_stack *s = room(p->stacks, p->nstacks, sizeof(*s));
	if (!s)
		return SIZE_MAX;
	p->stacks = s;
	if (k.nframes) {
		if (!(k.frames = malloc(k.nframes * sizeof(*k.frames))))
			return SIZE_MAX;
		memcpy(k.frames, p->scratch, k.nframes * sizeof(*k.frames));
	} else {
		k.frames = NULL;
	}
	if (!index_add(&p->stack_index, h, p->nstacks)) {
		free(k.frames);
		return SIZE_MAX;
	}
	s[p->nstacks] = k;
	return p->nstacks++;
}

struct thread_key {
	const char *name, *label;
	int64_t tid, pid;
	uint64_t addr; /* two Ruby threads may share a tid, one after the other */
};

static bool same_thread(const struct cs_profile *p, size_t id, const void *key)
{
	const struct thread_key *k = key;
	const struct cs_profile_thread *t = &p->threads[id];
	return t->tid == k->tid && t->pid == k->pid && t->addr == k->addr &&
	       same_text(t->name, k->name) &&
	       same_display(p->names.text[t->label], k->label);
}

static uint64_t thread_hash(const char *label, int64_t tid, const char *name)
{
	uint64_t h = mix(hash_text(FNV_OFFSET, label), (uint64_t)tid);
	return name ? hash_text(h, name) : h;
}

/* Thread t, at index in its snapshot's list, of process p->pid. */
static size_t thread_id(struct cs_profile *p, const struct rv_thread *t,
			size_t index)
{
	char own[64], label[96];
	if (t->name)
		snprintf(own, sizeof(own), "%s", t->name);
	else if (t->tid >= 0)
		snprintf(own, sizeof(own), "thread %lld", (long long)t->tid);
	else
		snprintf(own, sizeof(own), "thread %zu", index + 1);
	if (p->pid)
		snprintf(label, sizeof(label), "process %lld: %s",
			 (long long)p->pid, own);
	else
		snprintf(label, sizeof(label), "%s", own);
	struct thread_key k = {t->name, label, t->tid, p->pid, t->addr};
	uint64_t h = thread_hash(label, t->tid, t->name);
	size_t id = index_find(p, &p->thread_index, h, same_thread, &k);
	if (id != SIZE_MAX)
		return id;
	struct cs_profile_thread *s = room(p->threads, p->nthreads, sizeof(*s));
	if (!s)
		return SIZE_MAX;
	p->threads = s;
	struct cs_profile_thread n = {.name = t->name ? strdup(t->name) : NULL,
				      .tid = t->tid,
				      .ractor = t->ractor.present ? t->ractor.id
								  : 0,
				      .pid = p->pid,
				      .addr = t->addr,
				      .label = name_id(p, label)};
	if ((t->name && !n.name) || n.label == SIZE_MAX ||
	    !index_add(&p->thread_index, h, p->nthreads)) {
		free(n.name);
		return SIZE_MAX;
	}
	s[p->nthreads] = n;
	return p->nthreads++;
}

/* What a sample is besides its thread and stack. */
struct sample_key {
	uint64_t time_ns;
	size_t snapshot; /* of the thread's process */
	enum cs_profile_state state;
	enum rv_wait_kind wait;
};

/* One more snapshot of thread in stack: the thread's last sample grows
 * when it saw the same stack in the same state in its process's snapshot
 * before. */
static int add_sample(struct cs_profile *p, size_t thread, size_t stack,
		      const struct sample_key *k)
{
	struct cs_profile_thread *t = &p->threads[thread];
	struct cs_profile_sample *last = t->last ? &p->samples[t->last - 1]
						 : NULL;
	if (last && last->stack == stack && last->state == k->state &&
	    last->wait == k->wait && t->seen + 1 == k->snapshot) {
		last->weight++;
		last->last_ns = k->time_ns;
		t->seen = k->snapshot;
		return 1;
	}
	struct cs_profile_sample *s = room(p->samples, p->nsamples, sizeof(*s));
	if (!s)
		return 0;
	p->samples = s;
	s[p->nsamples] = (struct cs_profile_sample){
		.stack = stack,
		.thread = thread,
		.time_ns = k->time_ns,
		.last_ns = k->time_ns,
		.weight = 1,
		.snapshot = k->snapshot,
		.state = k->state,
		.wait = k->wait,
	};
	t->last = ++p->nsamples;
	t->seen = k->snapshot;
	return 1;
}

/* --- collapsed lines ------------------------------------------------------
 * Open addressing by the FNV-1a hash of the line's text, 256 slots at
 * first, doubled when half full and rehashed in slot order: the order the
 * formats list lines in. */

/* Same label, same frame names: the same line. */
static bool same_line(const struct cs_profile *p,
		      const struct cs_profile_line *l, size_t thread,
		      size_t stack)
{
	if (p->threads[l->thread].label != p->threads[thread].label)
		return false;
	if (l->stack == stack)
		return true;
	const struct cs_profile_stack *a = &p->stacks[l->stack],
				      *b = &p->stacks[stack];
	if (a->nframes != b->nframes)
		return false;
	for (size_t i = 0; i < a->nframes; i++)
		if (cs_profile_frame_name(p, a->frames[i]) !=
		    cs_profile_frame_name(p, b->frames[i]))
			return false;
	return true;
}

static size_t line_slot(const struct cs_profile *p,
			const struct cs_profile_line *lines, size_t n,
			uint64_t hash, size_t thread, size_t stack)
{
	size_t i = hash & (n - 1);
	while (lines[i].count && !same_line(p, &lines[i], thread, stack))
		i = (i + 1) & (n - 1);
	return i;
}

static int grow_lines(struct cs_profile *p)
{
	size_t n = p->nline_slots ? p->nline_slots * 2 : 256;
	struct cs_profile_line *lines = calloc(n, sizeof(*lines));
	if (!lines)
		return 0;
	p->grown++; /* the memos' slots are stale */
	for (size_t i = 0; i < p->nline_slots; i++) {
		const struct cs_profile_line *l = &p->lines[i];
		if (l->count)
			lines[line_slot(p, lines, n, l->hash, l->thread,
					l->stack)] = *l;
	}
	free(p->lines);
	p->lines = lines;
	p->nline_slots = n;
	return 1;
}

/* Count thread in stack times more in its line, whose text hashes to h,
 * and tell the line's slot. */
static int count_line(struct cs_profile *p, size_t thread, size_t stack,
		      uint64_t h, uint64_t times, size_t *slot)
{
	if ((p->nlines + 1) * 2 > p->nline_slots && !grow_lines(p))
		return 0;
	size_t i = line_slot(p, p->lines, p->nline_slots, h, thread, stack);
	if (!p->lines[i].count) {
		p->lines[i] = (struct cs_profile_line){thread, stack, 0, h};
		p->nlines++;
	}
	p->lines[i].count += times;
	*slot = i;
	return 1;
}

/* --- memos -------------------------------------------------------------- */

static void forget_memos(struct cs_profile *p)
{
	for (size_t i = 0; i < p->nmemos; i++) {
		free(p->memos[i].name);
		free(p->memos[i].frames);
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
	const struct cs_profile_memo *m = p->memos;
	if (index < p->nmemos && m[index].thread == t->addr &&
	    m[index].pid == p->pid)
		return &p->memos[index];
	for (size_t i = 0; i < p->nmemos; i++)
		if (m[i].thread == t->addr && m[i].pid == p->pid)
			return &p->memos[i];
	if (p->nmemos >= 2 * nthreads + 64)
		forget_memos(p);
	struct cs_profile_memo *grown =
		realloc(p->memos, (p->nmemos + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	p->memos = grown;
	grown[p->nmemos] =
		(struct cs_profile_memo){.thread = t->addr, .pid = p->pid};
	return &grown[p->nmemos++];
}

/* m remembers this thread under the same label: its thread id holds. */
static bool same_thread_as(const struct cs_profile_memo *m,
			   const struct rv_thread *t, size_t index)
{
	return m && m->valid && m->tid == t->tid && m->index == index &&
	       same_text(m->name, t->name);
}

/* The thread's stack was counted in m->slot last time, and its frames and
 * name are the same now. */
static bool seen_again(const struct cs_profile *p,
		       const struct cs_profile_memo *m,
		       const struct rv_thread *t, size_t index)
{
	if (!same_thread_as(m, t, index) || m->grown != p->grown ||
	    m->nframes != t->nframes || (t->nframes && !m->frames))
		return false;
	for (size_t j = 0; j < t->nframes; j++)
		if (!t->frames[j].names_id ||
		    t->frames[j].names_id != m->frames[j].names_id)
			return false;
	return true;
}

/* Frame f, which has mf's names_id, hence its function's name: mf's
 * frame, or its function's at the line f moved to. A names_id does not
 * promise the path: one that is not the same string is compared. */
static size_t frame_again(struct cs_profile *p,
			  const struct cs_profile_memo_frame *mf,
			  const struct rv_frame *f)
{
	size_t function = p->frames[mf->frame].function;
	if (f->kind != RV_FRAME_CFUNC && f->path != mf->path &&
	    !same_text(f->path, p->functions[function].file))
		return frame_id(p, f);
	if (line_of(f) == mf->line)
		return mf->frame;
	struct cs_profile_frame k = p->frames[mf->frame];
	k.line = line_of(f);
	return frame_of(p, k);
}

/* The stack of t, whose frames have the names_id of m's: only a frame
 * whose line moved is looked up again. */
static size_t stack_again(struct cs_profile *p, struct cs_profile_memo *m,
			  const struct rv_thread *t)
{
	bool moved = false;
	for (size_t j = 0; m->frames && j < t->nframes; j++) {
		struct cs_profile_memo_frame *mf = &m->frames[j];
		size_t id = frame_again(p, mf, &t->frames[j]);
		if (id == SIZE_MAX)
			return SIZE_MAX;
		moved |= id != mf->frame;
		mf->frame = id;
		mf->line = line_of(&t->frames[j]);
		mf->path = t->frames[j].path;
	}
	if (!moved)
		return m->stack_id;
	if (!scratch_for(p, t->nframes))
		return SIZE_MAX;
	for (size_t j = 0; j < t->nframes; j++)
		p->scratch[j] = m->frames[t->nframes - 1 - j].frame;
	size_t id = stack_of(p, t->nframes);
	if (id != SIZE_MAX)
		m->stack_id = id;
	return id;
}

/* The stack of t in p->scratch (outermost first) and its id, and the hash
 * of its collapsed line under thread in *hash. The outer frames whose
 * names_id are those of m's (NULL: none) are m's, their line's hash too:
 * only the frames below them are looked up. */
static size_t fill_stack(struct cs_profile *p, const struct cs_profile_memo *m,
			 const struct rv_thread *t, size_t thread,
			 uint64_t *hash)
{
	size_t n = t->nframes, mn = m && m->frames ? m->nframes : 0, k = 0;
	if (!scratch_for(p, n))
		return SIZE_MAX;
	for (; k < n && k < mn; k++) {
		const struct rv_frame *f = &t->frames[n - 1 - k];
		const struct cs_profile_memo_frame *mf = &m->frames[mn - 1 - k];
		if (!f->names_id || f->names_id != mf->names_id)
			break;
		if ((p->scratch[k] = frame_again(p, mf, f)) == SIZE_MAX)
			return SIZE_MAX;
		p->hashes[k] = mf->hash;
	}
	size_t label = p->threads[thread].label;
	uint64_t h = k ? p->hashes[k - 1]
		       : hash_text(FNV_OFFSET, cs_profile_display(p, label));
	for (size_t d = k; d < n; d++) {
		if ((p->scratch[d] = frame_id(p, &t->frames[n - 1 - d])) ==
		    SIZE_MAX)
			return SIZE_MAX;
		h = hash_frame(h, cs_profile_frame_text(p, p->scratch[d]));
		p->hashes[d] = h;
	}
	*hash = h;
	return stack_of(p, n);
}

static void remember(const struct cs_profile *p, struct cs_profile_memo *m,
		     const struct rv_thread *t, size_t index, size_t slot,
		     size_t thread, size_t stack)
{
	if (!m)
		return;
	m->valid = false;
	if (t->nframes > m->cap) {
		struct cs_profile_memo_frame *f =
			reallocarray(m->frames, t->nframes, sizeof(*f));
		if (!f)
			return;
		m->frames = f;
		m->cap = t->nframes;
	}
	free(m->name);
	m->name = t->name ? strdup(t->name) : NULL;
	if (t->name && !m->name)
		return;
	const struct cs_profile_stack *s = &p->stacks[stack];
	for (size_t j = 0, n = t->nframes; j < n; j++) {
		size_t frame = s->frames[n - 1 - j];
		m->frames[j] = (struct cs_profile_memo_frame){
			t->frames[j].names_id, t->frames[j].path,
			p->frames[frame].line, frame, p->hashes[n - 1 - j]};
	}
	m->nframes = t->nframes;
	m->tid = t->tid;
	m->index = index; /* in the label when there is no tid */
	m->slot = slot;
	m->grown = p->grown;
	m->thread_id = thread;
	m->stack_id = stack;
	m->valid = true;
}

/* Process p->pid's count of snapshots added; SIZE_MAX on allocation
 * failure. */
static size_t process_of(struct cs_profile *p)
{
	for (size_t i = 0; i < p->nprocs; i++)
		if (p->procs[i].pid == p->pid)
			return i;
	struct cs_profile_process *n = room(p->procs, p->nprocs, sizeof(*n));
	if (!n)
		return SIZE_MAX;
	p->procs = n;
	n[p->nprocs] = (struct cs_profile_process){p->pid, 0, 0};
	return p->nprocs++;
}

size_t cs_profile_threadless(const struct cs_profile *p, int64_t pid)
{
	for (size_t i = 0; i < p->nprocs; i++)
		if (p->procs[i].pid == pid)
			return p->procs[i].threadless;
	return 0;
}

int cs_profile_add(struct cs_profile *p, const struct rv_process *proc,
		   unsigned states, uint64_t time_ns)
{
	size_t own = process_of(p);
	if (own == SIZE_MAX)
		return 0;
	for (size_t i = 0; i < proc->nthreads; i++) {
		const struct rv_thread *t = &proc->threads[i];
		struct sample_key k = {time_ns, p->procs[own].snapshots,
				       cs_profile_state_of(proc, t),
				       RV_WAIT_NONE};
		if (states && !(states & (1u << k.state)))
			continue;
		if (k.state == CS_PROFILE_BLOCKED)
			k.wait = t->wait.kind;
		struct cs_profile_memo *memo = memo_of(p, t, i, proc->nthreads);
		if (seen_again(p, memo, t, i)) {
			/* the same names: the same line */
			size_t stack = stack_again(p, memo, t);
			if (stack == SIZE_MAX ||
			    !add_sample(p, memo->thread_id, stack, &k))
				return 0;
			p->lines[memo->slot].count++;
			continue;
		}
		bool same = same_thread_as(memo, t, i);
		size_t thread = same ? memo->thread_id : thread_id(p, t, i);
		size_t stack, slot;
		uint64_t h;
		const struct cs_profile_memo *known = same ? memo : NULL;
		if (thread == SIZE_MAX ||
		    (stack = fill_stack(p, known, t, thread, &h)) == SIZE_MAX ||
		    !count_line(p, thread, stack, h, 1, &slot) ||
		    !add_sample(p, thread, stack, &k))
			return 0;
		remember(p, memo, t, i, slot, thread, stack);
	}
	p->procs[own].snapshots++;
	p->snapshots++;
	if (!proc->nthreads)
		p->procs[own].threadless++;
	return 1;
}

static void index_free(struct cs_profile_index *x)
{
	free(x->slots);
}

/* --- settling --------------------------------------------------------------
 * A thread's label is taken from what is known of it when it is first
 * seen, so one sampled before Thread#name= was set, or before its kernel
 * thread started (no tid yet), is two or three threads of the tables. */

/* The thread u became: the first one after it of the same Ruby thread
 * (address and process) that contradicts nothing u knew, u having lacked
 * a name or a tid (a renamed thread stays two); SIZE_MAX if none. */
static size_t became(const struct cs_profile *p, size_t u)
{
	const struct cs_profile_thread *t = &p->threads[u];
	if (t->name && t->tid >= 0)
		return SIZE_MAX;
	for (size_t i = u + 1; i < p->nthreads; i++) {
		const struct cs_profile_thread *n = &p->threads[i];
		if (n->addr == t->addr && n->pid == t->pid &&
		    (!t->name || same_text(n->name, t->name)) &&
		    (t->tid < 0 || n->tid == t->tid))
			return i;
	}
	return SIZE_MAX;
}

/* The hash of the collapsed line of thread in stack, as fill_stack
 * computes it frame by frame. */
static uint64_t line_hash(const struct cs_profile *p, size_t thread,
			  size_t stack)
{
	uint64_t h = hash_text(FNV_OFFSET,
			       cs_profile_display(p, p->threads[thread].label));
	const struct cs_profile_stack *s = &p->stacks[stack];
	for (size_t d = 0; d < s->nframes; d++)
		h = hash_frame(h, cs_profile_frame_text(p, s->frames[d]));
	return h;
}

/* Thread i's new id: its own place among the kept ones, or the place of
 * the thread it became. */
static size_t settled_id(const size_t *to, const size_t *kept, size_t i)
{
	return to[i] == SIZE_MAX ? kept[i] : kept[to[i]];
}

int cs_profile_set_title(struct cs_profile *p, int64_t pid, const char *title)
{
	size_t i = 0;
	while (i < p->ntitles && p->titles[i].pid != pid)
		i++;
	if (i < p->ntitles && same_text(p->titles[i].text, title))
		return 1;
	char *copy = title ? strdup(title) : NULL;
	if (title && !copy)
		return 0;
	if (i == p->ntitles) {
		struct cs_profile_title *t =
			room(p->titles, p->ntitles, sizeof(*t));
		if (!t) {
			free(copy);
			return 0;
		}
		p->titles = t;
		t[p->ntitles++] = (struct cs_profile_title){pid, NULL};
	}
	free(p->titles[i].text);
	p->titles[i].text = copy;
	return 1;
}

/* Longest title in a label, in bytes: labels stay readable. */
#define TITLE_MAX 60

/* Thread i's label with its process's title; false if it has none, or on
 * allocation failure (*failed). */
static bool titled(struct cs_profile *p, size_t i, size_t *label, bool *failed)
{
	const struct cs_profile_thread *t = &p->threads[i];
	const char *title = NULL;
	for (size_t k = 0; t->pid && k < p->ntitles; k++)
		if (p->titles[k].pid == t->pid)
			title = p->titles[k].text;
	char prefix[48];
	int n = snprintf(prefix, sizeof(prefix),
			 "process %lld: ", (long long)t->pid);
	const char *old = cs_profile_display(p, t->label);
	if (!title || strncmp(old, prefix, (size_t)n) != 0)
		return false;
	size_t len = strlen(title);
	if (len > TITLE_MAX) /* cut at a character's start */
		for (len = TITLE_MAX; len && (title[len] & 0xc0) == 0x80;)
			len--;
	size_t size = strlen(old) + len + 4; /* " (" and ")" */
	char *text = malloc(size);
	if (!text) {
		*failed = true;
		return false;
	}
	snprintf(text, size, "process %lld (%.*s): %s", (long long)t->pid,
		 (int)len, title, old + n);
	*label = name_id(p, text);
	free(text);
	*failed |= *label == SIZE_MAX;
	return *label != SIZE_MAX;
}

int cs_profile_settle(struct cs_profile *p)
{
	size_t n = p->nthreads, merged = 0, relabeled = 0;
	bool failed = false;
	/* Titles first: names are only added, so a failure leaves the
	 * threads as they were. */
	size_t *labels = malloc((n ? n : 1) * sizeof(*labels));
	if (!labels)
		return 0;
	for (size_t i = 0; i < n; i++) {
		labels[i] = p->threads[i].label;
		relabeled += titled(p, i, &labels[i], &failed);
	}
	if (failed) {
		free(labels);
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		p->threads[i].label = labels[i];
	free(labels);
	size_t *to = calloc(n ? 2 * n : 1, sizeof(*to));
	if (!to)
		return 0;
	size_t *kept = to + n;
	/* last first, so that the thread u became has its own end already */
	for (size_t i = n; i-- > 0;) {
		to[i] = became(p, i);
		if (to[i] != SIZE_MAX && to[to[i]] != SIZE_MAX)
			to[i] = to[to[i]];
	}
	for (size_t i = 0, k = 0; i < n; i++) {
		merged += to[i] != SIZE_MAX;
		kept[i] = to[i] == SIZE_MAX ? k++ : SIZE_MAX;
	}
	if (!merged && !relabeled) {
		free(to);
		return 1;
	}
	/* Everything that can fail first: the profile stays whole if it
	 * does. Merging only joins lines, so the line slots are room enough
	 * (count_line below never grows them). */
	struct cs_profile_index index = {0};
	struct cs_profile_line *lines = calloc(p->nline_slots, sizeof(*lines));
	bool ok = lines != NULL;
	for (size_t i = 0; ok && i < n; i++) {
		const struct cs_profile_thread *t = &p->threads[i];
		ok = to[i] != SIZE_MAX ||
		     index_add(&index,
			       thread_hash(cs_profile_display(p, t->label),
					   t->tid, t->name),
			       kept[i]);
	}
	if (!ok) {
		free(lines);
		index_free(&index);
		free(to);
		return 0;
	}
	for (size_t i = 0; i < p->nsamples; i++)
		p->samples[i].thread =
			settled_id(to, kept, p->samples[i].thread);
	for (size_t i = 0; i < n; i++) {
		if (to[i] == SIZE_MAX)
			p->threads[kept[i]] = p->threads[i];
		else
			free(p->threads[i].name);
	}
	p->nthreads -= merged;
	for (size_t i = 0; i < p->nthreads; i++)
		p->threads[i].last = 0;
	index_free(&p->thread_index);
	p->thread_index = index;
	/* The lines again from the samples, whose weights are their counts. */
	free(p->lines);
	p->lines = lines;
	p->nlines = 0;
	p->grown++;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct cs_profile_sample *s = &p->samples[i];
		size_t slot;
		(void)count_line(p, s->thread, s->stack,
				 line_hash(p, s->thread, s->stack), s->weight,
				 &slot);
		p->threads[s->thread].last = i + 1;
	}
	forget_memos(p); /* they hold thread ids */
	free(to);
	return 1;
}

bool cs_profile_by_thread(const struct cs_profile *p, size_t **ids,
			  size_t **first)
{
	*ids = malloc((p->nsamples + 1) * sizeof(**ids));
	*first = calloc(p->nthreads + 2, sizeof(**first));
	if (!*ids || !*first)
		return false;
	size_t *at = *first;
	for (size_t i = 0; i < p->nsamples; i++)
		at[p->samples[i].thread + 2]++;
	for (size_t i = 2; i < p->nthreads + 2; i++)
		at[i] += at[i - 1];
	for (size_t i = 0; i < p->nsamples; i++)
		(*ids)[at[p->samples[i].thread + 1]++] = i;
	return true;
}

void cs_profile_free(struct cs_profile *p)
{
	for (size_t i = 0; i < p->names.count; i++)
		free(p->names.text[i]);
	for (size_t i = 0; i < p->nfunctions; i++) {
		free(p->functions[i].name);
		free(p->functions[i].file);
	}
	for (size_t i = 0; i < p->nstacks; i++)
		free(p->stacks[i].frames);
	for (size_t i = 0; i < p->nthreads; i++)
		free(p->threads[i].name);
	free(p->names.text);
	free(p->functions);
	free(p->frames);
	free(p->stacks);
	free(p->threads);
	free(p->samples);
	free(p->lines);
	for (size_t i = 0; i < p->ntitles; i++)
		free(p->titles[i].text);
	free(p->titles);
	free(p->procs);
	index_free(&p->name_index);
	index_free(&p->function_index);
	index_free(&p->frame_index);
	index_free(&p->stack_index);
	index_free(&p->thread_index);
	free(p->scratch);
	free(p->hashes);
	forget_memos(p);
	memset(p, 0, sizeof(*p));
}
