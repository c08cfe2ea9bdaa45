/* Included at the end of layout.def: the next pass starts with none of
 * its kinds defined. */
#undef MEMBER
#undef SIZE
#undef ENUM
#undef ENUMS
#undef VAR
#undef VAR_MEMBER
#undef CONST
#undef FUNC
#undef TEXT
#undef GC_MEMBER
#undef GC_SIZE
#undef GC_ENUM
#undef GC_CONST
#undef EXT_VAR
#undef EXT_MEMBER
