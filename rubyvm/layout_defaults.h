/* Included at the top of layout.def: each kind of line a pass of it does
 * not define expands to nothing, so a pass defines only the kinds it
 * wants. No include guard: every pass includes it anew. */
#ifndef MEMBER
#define MEMBER(...)
#endif
#ifndef SIZE
#define SIZE(...)
#endif
#ifndef ENUM
#define ENUM(...)
#endif
#ifndef ENUMS
#define ENUMS(...)
#endif
#ifndef VAR
#define VAR(...)
#endif
#ifndef VAR_MEMBER
#define VAR_MEMBER(...)
#endif
#ifndef CONST
#define CONST(...)
#endif
#ifndef FUNC
#define FUNC(...)
#endif
#ifndef TEXT
#define TEXT(...)
#endif
#ifndef GC_MEMBER
#define GC_MEMBER(...)
#endif
#ifndef GC_SIZE
#define GC_SIZE(...)
#endif
#ifndef GC_ENUM
#define GC_ENUM(...)
#endif
#ifndef GC_CONST
#define GC_CONST(...)
#endif
#ifndef EXT_VAR
#define EXT_VAR(...)
#endif
#ifndef EXT_MEMBER
#define EXT_MEMBER(...)
#endif
