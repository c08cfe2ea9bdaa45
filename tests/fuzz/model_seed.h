/* The model fuzzer's snapshot format (tests/fuzz/fuzz_model.c reads it,
 * tests/fuzz/make_model_seed.c writes it). All integers little-endian.
 *
 *   header (32 bytes):
 *     char     magic[8]     "CSFZMDL2"
 *     uint64   load_bias    where the VM module is loaded
 *     uint32   nitems       items that follow
 *     uint32   has_macros   struct rv_layout.has_macros
 *     uint64   spec_hash    rv_layout_spec_hash() when written (informative)
 *   nitems items, each named, so that a seed outlives edits of layout.def
 *   (a name this build does not know is skipped; an item no record names
 *   is missing):
 *     uint8 name_len, name_len bytes of the item's name (layout.def id),
 *     then 16 bytes, struct rv_item in field order:
 *     int64 value, uint32 size, uint16 bit_pos, uint8 bit_size, uint8 source
 *   an item named "LIST:ENUMERATOR" is an enumerator of the ENUMS list
 *   LIST (struct rv_layout.enums), its value the enumerator's, appended in
 *   the order of the records (one too long for a list, or past its room,
 *   is left out)
 *   then regions until the end of the file:
 *     uint64 addr, uint32 len, len bytes of target memory at addr
 *     (a region whose header or bytes run past the end is dropped)
 *
 * The harness's cs_memory serves a read only when every byte of it lies in
 * some region (regions may touch, a read may span them); any other read is
 * a CS_ERR_FAULT, as a core's missing pages would be. */
#ifndef CS_TESTS_FUZZ_MODEL_SEED_H
#define CS_TESTS_FUZZ_MODEL_SEED_H

#define MODEL_SEED_MAGIC "CSFZMDL2"
#define MODEL_SEED_HEADER 32
#define MODEL_SEED_ITEM 16
#define MODEL_SEED_REGION_HEADER 12

#endif
