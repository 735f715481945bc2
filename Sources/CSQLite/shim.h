#ifndef RECORDKEEPER_CSQLITE_SHIM_H
#define RECORDKEEPER_CSQLITE_SHIM_H

#include <sqlite3.h>

/// SQLITE_TRANSIENT is a macro casting -1 to a function pointer, which Swift cannot import.
/// RecordKeeper binds with SQLITE_STATIC where the buffer outlives the step, and with this
/// where SQLite must copy.
static inline sqlite3_destructor_type recordkeeper_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}

static inline sqlite3_destructor_type recordkeeper_sqlite_static(void) {
    return SQLITE_STATIC;
}

#endif
