/* The model fuzzer's snapshot format (tests/fuzz/fuzz_model.c reads it,
 * tests/fuzz/make_model_seed.c writes it). All integers little-endian.
 *
 *   header (32 bytes):
 *     char     magic[8]     "CSFZMDL1"
 *     uint64   load_bias    where the VM module is loaded
 *     uint32   nitems       == RVL_COUNT of the build (else input ignored)
 *     uint32   has_macros   struct rv_layout.has_macros
 *     uint64   spec_hash    rv_layout_spec_hash() when written (informative)
 *   nitems items (16 bytes each, struct rv_item in field order):
 *     int64 value, uint32 size, uint16 bit_pos, uint8 bit_size, uint8 source
 *   then regions until the end of the file:
 *     uint64 addr, uint32 len, len bytes of target memory at addr
 *     (a region whose header or bytes run past the end is dropped)
 *
 * The harness's rv_target serves a read only when every byte of it lies in
 * some region (regions may touch, a read may span them); any other read is
 * a CS_ERR_FAULT, as a core's missing pages would be. */
#ifndef CS_TESTS_FUZZ_MODEL_SEED_H
#define CS_TESTS_FUZZ_MODEL_SEED_H

#define MODEL_SEED_MAGIC "CSFZMDL1"
#define MODEL_SEED_HEADER 32
#define MODEL_SEED_ITEM 16
#define MODEL_SEED_REGION_HEADER 12

#endif
