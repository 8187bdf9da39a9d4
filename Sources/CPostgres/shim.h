#ifndef PHOTOLEDGER_CPOSTGRES_SHIM_H
#define PHOTOLEDGER_CPOSTGRES_SHIM_H
#include <libpq-fe.h>

/* The diagnostic field codes of PQresultErrorField are character macros; typed constants make
   them plain Swift values. */

/// `PG_DIAG_SQLSTATE`: the five-character SQLSTATE code of an error.
static const int plpq_diag_sqlstate = PG_DIAG_SQLSTATE;
/// `PG_DIAG_MESSAGE_PRIMARY`: the error's primary message.
static const int plpq_diag_message_primary = PG_DIAG_MESSAGE_PRIMARY;
/// `PG_DIAG_MESSAGE_DETAIL`: the error's detail, when it has one.
static const int plpq_diag_message_detail = PG_DIAG_MESSAGE_DETAIL;

#endif
