#ifndef PHOTOLEDGER_CSQLITE_SHIM_H
#define PHOTOLEDGER_CSQLITE_SHIM_H
#include <sqlite3.h>

/// SQLITE_TRANSIENT is a macro Swift cannot import: bound bytes are copied by SQLite.
static inline sqlite3_destructor_type csqlite_transient(void) { return SQLITE_TRANSIENT; }

/// sqlite3_db_config is variadic; this wrapper sets one integer option.
static inline int csqlite_db_config_int(sqlite3 *db, int op, int value) {
    return sqlite3_db_config(db, op, value, (int *)0);
}
#endif
