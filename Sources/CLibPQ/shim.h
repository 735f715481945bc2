#ifndef RECORDKEEPER_CLIBPQ_SHIM_H
#define RECORDKEEPER_CLIBPQ_SHIM_H

// libpq, PostgreSQL's client library (Debian: libpq-dev; pkg-config: libpq). Only
// RecordKeeperPostgres imports this module; the RecordKeeper library never links libpq.
#include <libpq-fe.h>

/// The PG_DIAG_* field codes are character-literal macros, which Swift does not import.
static inline int recordkeeper_pg_diag_sqlstate(void) { return PG_DIAG_SQLSTATE; }
static inline int recordkeeper_pg_diag_message_primary(void) { return PG_DIAG_MESSAGE_PRIMARY; }
static inline int recordkeeper_pg_diag_message_detail(void) { return PG_DIAG_MESSAGE_DETAIL; }
static inline int recordkeeper_pg_diag_severity(void) { return PG_DIAG_SEVERITY; }

#endif
