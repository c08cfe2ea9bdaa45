/* A small open-addressing hash map from uint64_t keys to pointers, for the
 * model's caches (ID -> name, class -> path). Key 0 is reserved. */
#ifndef CS_UTIL_U64MAP_H
#define CS_UTIL_U64MAP_H

#include <stddef.h>
#include <stdint.h>

struct u64map {
	uint64_t *keys;
	void **values;
	size_t count, nslots; /* nslots: power of two or 0 */
};

/* Returns the value or NULL; *found tells NULL values from absent keys. */
void *u64map_get(const struct u64map *m, uint64_t key, int *found);
/* 0 on allocation failure. Replaces (without freeing) an existing value. */
int u64map_put(struct u64map *m, uint64_t key, void *value);
/* Calls free_value (may be NULL) on each value, then frees the map. */
void u64map_free(struct u64map *m, void (*free_value)(void *));

#endif
