/* libdebuginfod, loaded the first time a module's debug info is asked of
 * a debuginfod server, never at start-up: the library brings in libcurl,
 * TLS, Kerberos and LDAP (some thirty libraries), which a run that finds
 * its debug info locally, or prints its usage, has no use for. */
#ifndef CS_DWARF_DEBUGINFOD_H
#define CS_DWARF_DEBUGINFOD_H

#include <stddef.h>
#include <stdint.h>

/* The library loaded, under this name. */
#define DW_DEBUGINFOD_SONAME "libdebuginfod.so.1"

/* Asks the servers DEBUGINFOD_URLS names for the debug file of a
 * build-id. Returns an open descriptor and sets *path (malloc'd, the file
 * in libdebuginfod's cache), or -1. When the library cannot be loaded,
 * *why is set to a sentence naming it and why (static text, the same for
 * every call); else *why is left alone. */
int dw_debuginfod_find_debuginfo(const uint8_t *build_id, size_t len,
				 char **path, const char **why);

#endif
