#include "u64map.h"

#include <stdlib.h>

static size_t slot(uint64_t key, size_t nslots)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return (size_t)key & (nslots - 1);
}

void *u64map_get(const struct u64map *m, uint64_t key, int *found)
{
	*found = 0;
	if (!m->nslots || !key)
		return NULL;
	for (size_t i = slot(key, m->nslots);; i = (i + 1) & (m->nslots - 1)) {
		if (m->keys[i] == key) {
			*found = 1;
			return m->values[i];
		}
		if (!m->keys[i])
			return NULL;
	}
}

static int grow(struct u64map *m)
{
	size_t nslots = m->nslots ? m->nslots * 2 : 64;
	uint64_t *keys = calloc(nslots, sizeof(*keys));
	void **values = calloc(nslots, sizeof(*values));
	if (!keys || !values) {
		free(keys);
		free(values);
		return 0;
	}
	for (size_t j = 0; j < m->nslots; j++) {
		if (!m->keys[j])
			continue;
		size_t i = slot(m->keys[j], nslots);
		while (keys[i])
			i = (i + 1) & (nslots - 1);
		keys[i] = m->keys[j];
		values[i] = m->values[j];
	}
	free(m->keys);
	free(m->values);
	m->keys = keys;
	m->values = values;
	m->nslots = nslots;
	return 1;
}

int u64map_put(struct u64map *m, uint64_t key, void *value)
{
	if (!key)
		return 1;
	if ((m->count + 1) * 2 > m->nslots && !grow(m))
		return 0;
	size_t i = slot(key, m->nslots);
	while (m->keys[i] && m->keys[i] != key)
		i = (i + 1) & (m->nslots - 1);
	if (!m->keys[i])
		m->count++;
	m->keys[i] = key;
	m->values[i] = value;
	return 1;
}

void u64map_free(struct u64map *m, void (*free_value)(void *))
{
	if (free_value)
		for (size_t i = 0; i < m->nslots; i++)
			if (m->keys[i])
				free_value(m->values[i]);
	free(m->keys);
	free(m->values);
	m->keys = NULL;
	m->values = NULL;
	m->count = m->nslots = 0;
}
