/*
 * shard_conn.c -- libpq connections from the federated coordinator to its
 * shards (see shard_conn.h)
 *
 * One connection per shard for the whole fit (so the same shard backend
 * serves every round); waits are on the latch, so a cancel or a terminate
 * of the coordinator is served at once; every connection is closed (a busy
 * one cancelled first) on success and on error by the caller's
 * fed_disconnect_all.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/wait_event.h"

#include "error_kinds.h"
#include "perpca.h"
#include "shard_conn.h"

/* Non-superusers must give a password in the connection string (as dblink requires). */
static void
fed_check_conninfo(const char *conninfo, int index)
{
	char	   *err = NULL;
	PQconninfoOption *opts = PQconninfoParse(conninfo, &err);
	bool		has_password = false;

	if (opts == NULL)
	{
		char	   *msg = pstrdup(err ? err : "out of memory");

		PQfreemem(err);
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_SHARD_CONNECT),
				 errmsg("invalid connection string for shard %d", index),
				 errdetail("%s", pchomp(msg))));
	}
	for (PQconninfoOption *o = opts; o->keyword != NULL; o++)
		if (strcmp(o->keyword, "password") == 0 && o->val != NULL && o->val[0] != '\0')
			has_password = true;
	PQconninfoFree(opts);
	if (!superuser() && !has_password)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_SHARD_PASSWORD),
				 errmsg("password is required for shard %d", index),
				 errdetail("Non-superusers must provide a password in the connection string.")));
}

/* Wait (interruptibly) until the socket of conn is ready for the given events. */
static void
fed_wait_socket(PGconn *conn, int events)
{
	(void) WaitLatchOrSocket(MyLatch, WL_LATCH_SET | WL_EXIT_ON_PM_DEATH | events,
							 PQsocket(conn), -1L, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

/* Raise a connection failure of shard sc with libpq's message. */
static void
fed_connection_error(ShardConn *sc, const char *what)
{
	char	   *msg = pchomp(PQerrorMessage(sc->conn));

	ereport(ERROR,
			(errcode(PERPCA_ERRCODE_SHARD_CONNECT),
			 errmsg("could not %s shard %d", what, sc->index),
			 errdetail("%s", msg),
			 errhint("Check the shard's connection string and that its server is running.")));
}

/* Connect to one shard without blocking interrupts (connection polling on the latch). */
static void
fed_connect(ShardConn *sc, const char *conninfo)
{
	PostgresPollingStatusType st = PGRES_POLLING_WRITING;
	/* the string may be key=value pairs or a URI; shards see the coordinator as application "perpca_fit_federated" */
	static const char *const keywords[] = {"dbname", "fallback_application_name", NULL};
	const char *values[] = {conninfo, "perpca_fit_federated", NULL};

	fed_check_conninfo(conninfo, sc->index);
	sc->conn = PQconnectStartParams(keywords, values, 1);
	if (sc->conn == NULL)
		ereport(ERROR, (errcode(PERPCA_ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	if (PQstatus(sc->conn) == CONNECTION_BAD)
		fed_connection_error(sc, "connect to");
	while (st != PGRES_POLLING_OK)
	{
		if (st == PGRES_POLLING_FAILED)
			fed_connection_error(sc, "connect to");
		fed_wait_socket(sc->conn, st == PGRES_POLLING_READING ? WL_SOCKET_READABLE
						: WL_SOCKET_WRITEABLE);
		st = PQconnectPoll(sc->conn);
	}
	if (!superuser() && !PQconnectionUsedPassword(sc->conn))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_SHARD_PASSWORD),
				 errmsg("password is required for shard %d", sc->index),
				 errdetail("Non-superusers cannot connect if the server does not request a password.")));
}

void
fed_send(ShardConn *sc, const char *sql, int nparams, const char *const *params)
{
	if (!PQsendQueryParams(sc->conn, sql, nparams, NULL, params, NULL, NULL, 0))
		fed_connection_error(sc, "send a command to");
	sc->busy = true;
	sc->sent += strlen(sql);
	for (int i = 0; i < nparams; i++)
		sc->sent += params[i] ? strlen(params[i]) : 0;
}

/* Rethrow a shard's error with its SQLSTATE, message, detail and hint (res is cleared). */
static void
fed_remote_error(ShardConn *sc, PGresult *res)
{
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	const char *prim = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	const char *detail = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL);
	const char *hint = PQresultErrorField(res, PG_DIAG_MESSAGE_HINT);
	int			code = state ? MAKE_SQLSTATE(state[0], state[1], state[2], state[3], state[4])
		: PERPCA_ERRCODE_SHARD_LOST;
	char	   *m = pstrdup(prim ? prim : pchomp(PQerrorMessage(sc->conn)));
	char	   *dt = detail ? pstrdup(detail) : NULL;
	char	   *h = hint ? pstrdup(hint) : NULL;

	PQclear(res);
	ereport(ERROR,
			(errcode(code),
			 errmsg("shard %d: %s", sc->index, m),
			 dt ? errdetail("%s", dt) : 0,
			 h ? errhint("%s", h) : 0));
}

/* Copy a tuples result into palloc'd text values (and count its bytes); res is cleared. */
static ShardRows *
fed_copy_rows(ShardConn *sc, PGresult *res)
{
	ShardRows  *r = palloc(sizeof(ShardRows));

	r->nrows = PQntuples(res);
	r->ncols = PQnfields(res);
	r->values = palloc(sizeof(char *) * Max(r->nrows * r->ncols, 1));
	for (int i = 0; i < r->nrows; i++)
		for (int j = 0; j < r->ncols; j++)
		{
			if (PQgetisnull(res, i, j))
			{
				SHARD_VALUE(r, i, j) = NULL;
				continue;
			}
			SHARD_VALUE(r, i, j) = pstrdup(PQgetvalue(res, i, j));
			sc->received += PQgetlength(res, i, j);
		}
	PQclear(res);
	return r;
}

ShardRows *
fed_get(ShardConn *sc)
{
	PGresult   *res,
			   *first = NULL;

	/* one command: keep the first result, drain the rest */
	do
	{
		while (PQisBusy(sc->conn))
		{
			fed_wait_socket(sc->conn, WL_SOCKET_READABLE);
			if (!PQconsumeInput(sc->conn))
				fed_connection_error(sc, "read a result from");
		}
		res = PQgetResult(sc->conn);
		if (first == NULL)
			first = res;
		else if (res != NULL)
			PQclear(res);
	} while (res != NULL);
	sc->busy = false;
	if (first == NULL || PQresultStatus(first) != PGRES_TUPLES_OK)
		fed_remote_error(sc, first);
	return fed_copy_rows(sc, first);
}

void
fed_disconnect_all(ShardConn *sc, int n)
{
	for (int s = 0; s < n; s++)
	{
		if (sc[s].conn == NULL)
			continue;
		if (sc[s].busy && PQstatus(sc[s].conn) == CONNECTION_OK)
		{
			PGcancel   *cancel = PQgetCancel(sc[s].conn);
			char		errbuf[256];

			if (cancel != NULL)
			{
				(void) PQcancel(cancel, errbuf, sizeof(errbuf));
				PQfreeCancel(cancel);
			}
		}
		PQfinish(sc[s].conn);
		sc[s].conn = NULL;
	}
}

void
fed_connect_all(ShardConn *sc, int n, char **conninfo)
{
	static const char *const setup =
		"SELECT (SELECT pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_extension e"
		" JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'perpca'),"
		" pg_catalog.set_config('extra_float_digits', '3', false)";

	for (int s = 0; s < n; s++)
		fed_connect(&sc[s], conninfo[s]);
	for (int s = 0; s < n; s++)
		fed_send(&sc[s], setup, 0, NULL);
	for (int s = 0; s < n; s++)
	{
		ShardRows  *r = fed_get(&sc[s]);

		if (r->nrows != 1 || SHARD_VALUE(r, 0, 0) == NULL)
			ereport(ERROR,
					(errcode(PERPCA_ERRCODE_UNDEFINED),
					 errmsg("extension \"perpca\" is not installed on shard %d", sc[s].index),
					 errhint("Run CREATE EXTENSION perpca in the shard's database.")));
	}
}

/* ------------------------------------------------------------------------
 * Coordinator: text forms of matrices
 * ------------------------------------------------------------------------
 */

char *
fed_matrix_text(const double *A, int m, int n)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	for (int i = 0; i < m; i++)
	{
		appendStringInfoString(&buf, i == 0 ? "{" : ",{");
		for (int j = 0; j < n; j++)
			appendStringInfo(&buf, j == 0 ? "%.17g" : ",%.17g", A[(int64) i * n + j]);
		appendStringInfoChar(&buf, '}');
	}
	appendStringInfoChar(&buf, '}');
	return buf.data;
}

double *
fed_matrix_parse(const ShardConn *sc, const char *text, int *m, int *n, const char *what)
{
	ArrayType  *a;
	int			r,
				c;
	double	   *x;

	if (text == NULL)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_SHARD_PROTOCOL),
				 errmsg("shard %d returned a NULL %s", sc->index, what)));
	a = DatumGetArrayTypeP(OidInputFunctionCall(F_ARRAY_IN, (char *) text, FLOAT8OID, -1));
	x = perpca_matrix_arg(a, &r, &c, what);
	if ((*m >= 0 && r != *m) || (*n >= 0 && c != *n))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_SHARD_PROTOCOL),
				 errmsg("shard %d returned a %d x %d %s, expected %d x %d",
						sc->index, r, c, what, *m >= 0 ? *m : r, *n >= 0 ? *n : c)));
	*m = r;
	*n = c;
	return x;
}

double
fed_float_parse(const ShardConn *sc, const char *text, const char *what)
{
	double		x;

	if (text == NULL)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_SHARD_PROTOCOL),
				 errmsg("shard %d returned a NULL %s", sc->index, what)));
	x = DatumGetFloat8(DirectFunctionCall1(float8in, CStringGetDatum(text)));
	if (!isfinite(x))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_BAD_VALUE),
				 errmsg("shard %d returned a non-finite %s", sc->index, what)));
	return x;
}

