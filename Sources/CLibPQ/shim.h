#ifndef RECORDKEEPER_CLIBPQ_SHIM_H
#define RECORDKEEPER_CLIBPQ_SHIM_H

// libpq, PostgreSQL's client library (Debian: libpq-dev; pkg-config: libpq). Only
// RecordKeeperPostgres imports this module; the RecordKeeper library never links libpq.
#include <libpq-fe.h>

#endif
