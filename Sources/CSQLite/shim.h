#ifndef RECORDKEEPER_CSQLITE_SHIM_H
#define RECORDKEEPER_CSQLITE_SHIM_H

#include <sqlite3.h>

/// SQLITE_TRANSIENT and SQLITE_STATIC are macros casting -1 and 0 to a function pointer, which
/// Swift cannot import. The library binds with SQLITE_TRANSIENT (SQLite copies the bytes, so a
/// Swift buffer need not outlive the call); the benchmark's raw-SQLite baseline binds with
/// SQLITE_STATIC, as a hand-written C program would.
static inline sqlite3_destructor_type recordkeeper_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}

static inline sqlite3_destructor_type recordkeeper_sqlite_static(void) {
    return SQLITE_STATIC;
}

/// sqlite3_db_config is variadic, which Swift cannot call: this is its one use, turning off the
/// checkpoint a connection makes when it closes as the file's last (SQLite 3.16 and later).
static inline int recordkeeper_sqlite_no_checkpoint_on_close(sqlite3 *db) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)0);
}

#endif
