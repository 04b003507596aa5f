/*
 * federated.c -- the coordinator of perpca_fit_federated(): PerPCA rounds
 * where the data live (paper, Algorithm 2 over the network)
 *
 * perpca_fit_federated() opens one libpq connection per shard for the whole
 * fit (so the same shard backend serves every round), sends each phase to
 * every shard before waiting for any (the shards work concurrently), and
 * runs the server step (fit_server_step(): average, then retract) itself.
 * The shards run the perpca_shard_* functions of federated_shard.c (the
 * protocol is in federated.h).  Only U (d x n_global) goes out and one
 * d x n_global sum per shard comes back each round.  Waits are
 * interruptible and every connection is closed (a busy one cancelled first)
 * on success and on error.
 */
#include "postgres.h"

#include <math.h>

#include "libpq-fe.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "clients.h"
#include "federated.h"
#include "fit.h"
#include "linalg.h"
#include "perpca.h"

PG_FUNCTION_INFO_V1(perpca_fit_federated);
PG_FUNCTION_INFO_V1(perpca_last_federated_fit);

/* ------------------------------------------------------------------------
 * Coordinator: connections to the shards
 * ------------------------------------------------------------------------
 */

/* One shard's connection and what crossed it. */
typedef struct ShardConn
{
	PGconn	   *conn;			/* malloc'd by libpq: closed in fed_disconnect_all */
	int			index;			/* 1-based, for messages */
	char	   *schema;			/* quoted schema of perpca on the shard */
	bool		busy;			/* a command was sent and its result not read */
	int64		sent;			/* bytes of commands and parameters sent */
	int64		received;		/* bytes of result values received */
} ShardConn;

/* A shard's answer: nrows x ncols text values (NULL for SQL NULL). */
typedef struct ShardRows
{
	int			nrows;
	int			ncols;
	char	  **values;
} ShardRows;

#define SHARD_VALUE(r, i, j) ((r)->values[(i) * (r)->ncols + (j)])

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
				(errcode(ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION),
				 errmsg("invalid connection string for shard %d", index),
				 errdetail("%s", pchomp(msg))));
	}
	for (PQconninfoOption *o = opts; o->keyword != NULL; o++)
		if (strcmp(o->keyword, "password") == 0 && o->val != NULL && o->val[0] != '\0')
			has_password = true;
	PQconninfoFree(opts);
	if (!superuser() && !has_password)
		ereport(ERROR,
				(errcode(ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED),
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
			(errcode(ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION),
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
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
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
				(errcode(ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED),
				 errmsg("password is required for shard %d", sc->index),
				 errdetail("Non-superusers cannot connect if the server does not request a password.")));
}

/* Send one command with text parameters to a shard (its result is read by fed_get). */
static void
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
		: ERRCODE_CONNECTION_FAILURE;
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

/* Wait for the result of the command sent to sc; the shard's error is rethrown. */
static ShardRows *
fed_get(ShardConn *sc)
{
	PGresult   *res,
			   *first = NULL;

	while (PQisBusy(sc->conn))
	{
		fed_wait_socket(sc->conn, WL_SOCKET_READABLE);
		if (!PQconsumeInput(sc->conn))
			fed_connection_error(sc, "read a result from");
	}
	/* one command: keep the first result, drain the rest (PQgetResult does not block now) */
	while ((res = PQgetResult(sc->conn)) != NULL)
	{
		if (first == NULL)
			first = res;
		else
			PQclear(res);
		while (PQisBusy(sc->conn))
		{
			fed_wait_socket(sc->conn, WL_SOCKET_READABLE);
			if (!PQconsumeInput(sc->conn))
				fed_connection_error(sc, "read a result from");
		}
	}
	sc->busy = false;
	if (first == NULL || PQresultStatus(first) != PGRES_TUPLES_OK)
		fed_remote_error(sc, first);
	return fed_copy_rows(sc, first);
}

/* Cancel a busy shard's command and close every connection (never raises). */
static void
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

/* Connect to every shard, check that perpca is installed there, and ask for exact floats. */
static void
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
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("extension \"perpca\" is not installed on shard %d", sc[s].index),
					 errhint("Run CREATE EXTENSION perpca in the shard's database.")));
		sc[s].schema = SHARD_VALUE(r, 0, 0);
	}
}

/* ------------------------------------------------------------------------
 * Coordinator: text forms of matrices
 * ------------------------------------------------------------------------
 */

/* The m x n matrix A as a 2-D float8[] literal with exact (17-digit) values. */
static char *
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

/*
 * A shard's float8[] value (text) as a checked matrix; *m and *n hold the
 * expected rows and columns (-1: any) and get the actual ones.
 */
static double *
fed_matrix_parse(const ShardConn *sc, const char *text, int *m, int *n, const char *what)
{
	ArrayType  *a;
	int			r,
				c;
	double	   *x;

	if (text == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("shard %d returned a NULL %s", sc->index, what)));
	a = DatumGetArrayTypeP(OidInputFunctionCall(F_ARRAY_IN, (char *) text, FLOAT8OID, -1));
	x = perpca_matrix_arg(a, &r, &c, what);
	if ((*m >= 0 && r != *m) || (*n >= 0 && c != *n))
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("shard %d returned a %d x %d %s, expected %d x %d",
						sc->index, r, c, what, *m >= 0 ? *m : r, *n >= 0 ? *n : c)));
	*m = r;
	*n = c;
	return x;
}

/* A shard's float8 value (text), checked to be finite. */
static double
fed_float_parse(const ShardConn *sc, const char *text, const char *what)
{
	double		x;

	if (text == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("shard %d returned a NULL %s", sc->index, what)));
	x = DatumGetFloat8(DirectFunctionCall1(float8in, CStringGetDatum(text)));
	if (!isfinite(x))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("shard %d returned a non-finite %s", sc->index, what)));
	return x;
}

/* ------------------------------------------------------------------------
 * Coordinator: the fit
 * ------------------------------------------------------------------------
 */

/* Arguments of perpca_fit_federated, in SQL order. */
enum
{
	FARG_SHARDS, FARG_QUERY, FARG_N_GLOBAL, FARG_N_LOCAL, FARG_ROUNDS, FARG_TOLERANCE,
	FARG_STEP, FARG_UPDATE, FARG_RETRACTION, FARG_INIT, FARG_CENTER, FARG_WEIGHTS,
	FARG_VERBOSE, FARG_ADAPTIVE
};

/* Diagnostics of a federated fit (perpca_last_federated_fit()). */
typedef struct FedDiagnostics
{
	int			rounds;
	bool		converged;
	double		objective;
	double		kkt_residual;
	double		step;
	int			n_shards;
	int			n_clients;
	int			dim;
	int64		setup_bytes;	/* open + init: commands out, answers back */
	int64		round_bytes;	/* per round (average), commands out, answers back */
	int64		result_bytes;	/* finish + result */
	int64		round_binary_bytes; /* per round, as packed float8: 2 d n_global + 3 per shard */
	int64		stats_binary_bytes; /* the clients' perpca_stats values (what shipping them costs) */
	double		seconds;
} FedDiagnostics;

static FedDiagnostics last_fed;
static bool have_last_fed = false;

/* Everything the coordinator keeps during one fit. */
typedef struct FedFit
{
	/* options */
	char	   *query;
	int			r1;
	int			n_local;
	int			rounds;
	double		tolerance;
	double		step;			/* 0: derived */
	bool		adaptive;
	int			update;
	int			retraction;
	int			init;
	int			center;
	int			weights;
	bool		verbose;
	/* shards */
	int			nshards;
	char	  **conninfo;
	ShardConn  *sc;
	bool	   *active;			/* shard has clients */
	char		id[64];
	/* problem */
	int			d;
	int			nclients;
	double		W;				/* sum of all client weights (unnormalized) */
	FitProblem *p;				/* one pseudo-client per shard, for fit_server_step */
	FedDiagnostics diag;
} FedFit;

/* Bytes sent and received over all connections so far. */
static int64
fed_bytes(const FedFit *f)
{
	int64		total = 0;

	for (int s = 0; s < f->nshards; s++)
		total += f->sc[s].sent + f->sc[s].received;
	return total;
}

/* The shards argument: a non-empty 1-D text[] without NULLs. */
static void
fed_shards_arg(FunctionCallInfo fcinfo, FedFit *f)
{
	ArrayType  *a;
	Datum	   *elems;
	bool	   *nulls;

	if (PG_ARGISNULL(FARG_SHARDS))
		clients_null_option("shards");
	a = PG_GETARG_ARRAYTYPE_P(FARG_SHARDS);
	if (ARR_NDIM(a) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("shards must be a one-dimensional array of connection strings")));
	deconstruct_array(a, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &f->nshards);
	if (f->nshards == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("shards must hold at least one connection string")));
	f->conninfo = palloc(sizeof(char *) * f->nshards);
	for (int s = 0; s < f->nshards; s++)
	{
		if (nulls[s])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("connection string of shard %d is NULL", s + 1)));
		f->conninfo[s] = TextDatumGetCString(elems[s]);
	}
}

/* Read and check every argument of perpca_fit_federated. */
static void
fed_parse(FunctionCallInfo fcinfo, FedFit *f)
{
	memset(f, 0, sizeof(FedFit));
	fed_shards_arg(fcinfo, f);
	f->query = clients_text_arg(fcinfo, FARG_QUERY, "query");
	f->r1 = clients_int_arg(fcinfo, FARG_N_GLOBAL, "n_global", 1);
	f->n_local = clients_int_arg(fcinfo, FARG_N_LOCAL, "n_local", 0);
	f->rounds = clients_int_arg(fcinfo, FARG_ROUNDS, "rounds", 1);
	f->tolerance = clients_nonnegative_arg(fcinfo, FARG_TOLERANCE, "tolerance");
	f->step = clients_step_arg(fcinfo, FARG_STEP);
	f->update = clients_choice_arg(fcinfo, FARG_UPDATE, "update", clients_update_names,
								   lengthof(clients_update_names));
	f->retraction = clients_choice_arg(fcinfo, FARG_RETRACTION, "retraction",
									   clients_retraction_names,
									   lengthof(clients_retraction_names));
	f->init = clients_choice_arg(fcinfo, FARG_INIT, "init", federated_init_names,
								 lengthof(federated_init_names));
	f->center = clients_choice_arg(fcinfo, FARG_CENTER, "center", clients_center_names,
								   lengthof(clients_center_names));
	f->weights = clients_choice_arg(fcinfo, FARG_WEIGHTS, "weights", clients_weights_names,
									lengthof(clients_weights_names));
	if (PG_ARGISNULL(FARG_VERBOSE))
		clients_null_option("verbose");
	f->verbose = PG_GETARG_BOOL(FARG_VERBOSE);
	/* adaptive NULL: adapt only the derived step, as perpca_fit does */
	f->adaptive = PG_ARGISNULL(FARG_ADAPTIVE) ? PG_ARGISNULL(FARG_STEP) : PG_GETARG_BOOL(FARG_ADAPTIVE);
}

/* A shard's 1-D float8[] value (text) of length d, checked. */
static double *
fed_vector_parse(const ShardConn *sc, const char *text, int d, const char *what)
{
	int			len;
	double	   *x;

	if (text == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("shard %d returned a NULL %s", sc->index, what)));
	x = perpca_vector_arg(DatumGetArrayTypeP(OidInputFunctionCall(F_ARRAY_IN, (char *) text,
																  FLOAT8OID, -1)),
						  &len, what);
	if (len != d)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("shard %d returned a %s of length %d, expected %d", sc->index, what, len, d)));
	return x;
}

/* Send the same command to every shard that has clients. */
static void
fed_send_active(FedFit *f, const char *function, int nparams, const char *const *params)
{
	for (int s = 0; s < f->nshards; s++)
	{
		StringInfoData sql;

		if (!f->active[s])
			continue;
		initStringInfo(&sql);
		appendStringInfo(&sql, "SELECT * FROM %s.%s(", f->sc[s].schema, function);
		for (int i = 1; i <= nparams; i++)
			appendStringInfo(&sql, i == 1 ? "$%d" : ", $%d", i);
		appendStringInfoChar(&sql, ')');
		fed_send(&f->sc[s], sql.data, nparams, params);
	}
}

/* Phase 1: open the fit on every shard; returns the sum of n_i mean_i, sets the row count. */
static double *
fed_open(FedFit *f, int64 *rows)
{
	char		r1[16],
				nl[16];
	const char *params[5] = {f->id, f->query, r1, nl, clients_weights_names[f->weights]};
	double	   *mean_sum = NULL;

	snprintf(r1, sizeof(r1), "%d", f->r1);
	snprintf(nl, sizeof(nl), "%d", f->n_local);
	for (int s = 0; s < f->nshards; s++)
		f->active[s] = true;
	fed_send_active(f, "perpca_shard_open", 5, params);
	*rows = 0;
	for (int s = 0; s < f->nshards; s++)
	{
		ShardRows  *r = fed_get(&f->sc[s]);
		int			n = pg_strtoint32(SHARD_VALUE(r, 0, 0)),
					d = pg_strtoint32(SHARD_VALUE(r, 0, 1));

		f->active[s] = n > 0;
		if (n == 0)
			continue;
		if (f->nclients > 0 && d != f->d)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("clients of shard %d have dimension %d, expected %d", s + 1, d, f->d),
					 errdetail("All clients must have the same dimension.")));
		perpca_check_dim_limit(d);
		f->d = d;
		f->nclients += n;
		*rows += pg_strtoint64(SHARD_VALUE(r, 0, 2));
		f->diag.stats_binary_bytes += pg_strtoint64(SHARD_VALUE(r, 0, 4));
		if (mean_sum == NULL)
			mean_sum = palloc0(sizeof(double) * d);
		linalg_axpy(d, 1.0, fed_vector_parse(&f->sc[s], SHARD_VALUE(r, 0, 3), d, "mean sum"),
					mean_sum);
	}
	if (f->nclients == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("query returned no clients on any shard"),
				 errhint("perpca_fit_federated needs at least one (client, perpca_stats) row.")));
	return mean_sum;
}

/* The centre of the S_i as a float8[] literal: NULL (center 'client'), the pooled mean or zero. */
static char *
fed_centre_text(FedFit *f, double *mean_sum, int64 rows)
{
	char	   *text;

	if (f->center == 0)
		return NULL;
	for (int j = 0; j < f->d; j++)
		mean_sum[j] = f->center == 1 ? mean_sum[j] / (double) rows : 0.0;
	/* the single row "{{...}}" of a 1 x d matrix without its outer braces */
	text = fed_matrix_text(mean_sum, 1, f->d) + 1;
	text[strlen(text) - 1] = '\0';
	return text;
}

/* One pseudo-client per shard: fit_server_step averages sum_s (1/W) usum_s. */
static void
fed_make_problem(FedFit *f)
{
	FitClient  *pseudo = palloc0(sizeof(FitClient) * f->nshards);

	f->p = fit_problem_create(f->d, f->r1, f->nshards, pseudo);
}

/* Phase 2: build the S_i on every shard; U0 = top n_global left singular vectors of [B_1, B_2, ...]. */
static void
fed_init(FedFit *f, const char *centre)
{
	const char *params[5] = {f->id, centre, federated_init_names[f->init],
	clients_update_names[f->update], clients_retraction_names[f->retraction]};
	double	  **B = palloc0(sizeof(double *) * f->nshards);
	int		   *q = palloc0(sizeof(int) * f->nshards);
	int			Q = 0,
				off = 0;
	double	   *stacked;

	fed_send_active(f, "perpca_shard_init", 5, params);
	for (int s = 0; s < f->nshards; s++)
	{
		ShardRows  *r;
		int			m = f->d;

		if (!f->active[s])
			continue;
		r = fed_get(&f->sc[s]);
		f->W += fed_float_parse(&f->sc[s], SHARD_VALUE(r, 0, 0), "weight");
		f->p->lambda_max = Max(f->p->lambda_max,
							   fed_float_parse(&f->sc[s], SHARD_VALUE(r, 0, 1), "lambda_max"));
		q[s] = -1;
		B[s] = fed_matrix_parse(&f->sc[s], SHARD_VALUE(r, 0, 2), &m, &q[s], "start basis");
		Q += q[s];
	}
	if (Q < f->r1 || !(f->W > 0.0))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("the shards' start bases have %d columns, fewer than n_global = %d", Q, f->r1)));
	stacked = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * f->d * Q);
	for (int s = 0; s < f->nshards; s++)
		if (f->active[s])
		{
			linalg_copy(f->d, q[s], B[s], q[s], stacked + off, Q);
			off += q[s];
		}
	fit_left_singular(f->p, f->d, Q, stacked, f->r1, f->p->U, f->r1, NULL);
	pfree(stacked);
	fit_initial_step(f->p, f->step);
}


/* One round: U out, every shard's sums back into the pseudo-clients; returns the objective, sets *change. */
static double
fed_round(FedFit *f, double step, double *change)
{
	FitProblem *p = f->p;
	char		stepbuf[32];
	const char *params[3] = {f->id, fed_matrix_text(p->U, f->d, f->r1), stepbuf};
	double		objective = 0.0;

	snprintf(stepbuf, sizeof(stepbuf), "%.17g", step);
	fed_send_active(f, "perpca_shard_round", 3, params);
	for (int s = 0; s < f->nshards; s++)
	{
		FitClient  *c = &p->clients[s];
		ShardRows  *r;
		int			m = f->d,
					n = f->r1;

		c->weight = 0.0;
		if (!f->active[s])
			continue;
		r = fed_get(&f->sc[s]);
		memcpy(c->Ui, fed_matrix_parse(&f->sc[s], SHARD_VALUE(r, 0, 0), &m, &n, "U sum"),
			   sizeof(double) * f->d * f->r1);
		c->weight = 1.0 / f->W;
		objective += fed_float_parse(&f->sc[s], SHARD_VALUE(r, 0, 2), "objective");
		*change = Max(*change, fed_float_parse(&f->sc[s], SHARD_VALUE(r, 0, 3), "change"));
	}
	return objective * f->nclients / f->W;
}

/* Phase 3: rounds until the largest projector change falls below the tolerance. */
static void
fed_rounds(FedFit *f)
{
	FitProblem *p = f->p;
	double		previous = -INFINITY;

	for (int t = 1; t <= f->rounds; t++)
	{
		double		step = p->step,
					change = 0.0;

		CHECK_FOR_INTERRUPTS();
		perpca_report_phase("perpca_fit_federated: round %d, %d shards", t, f->nshards);
		p->objective = fed_round(f, step, &change);
		fit_server_step(p, (FitRetraction) f->retraction, f->adaptive ? FIT_MOMENTUM : 0.0);
		change = Max(change, fit_projector_distance(f->d, f->r1, p->Uprev, f->r1, p->U, f->r1,
													 p->scratch));
		f->diag.rounds = t;
		if (f->verbose && (fit_report_round(t) || t == f->rounds))
			ereport(NOTICE,
					(errmsg("round %d: objective %.10g, change %.3e, step %.3e",
							t, p->objective, change, step)));
		if (f->tolerance > 0.0 && change < f->tolerance)
		{
			f->diag.converged = true;
			break;
		}
		if (f->adaptive)
			fit_adapt_step(p, previous, INFINITY);	/* no KKT residual per round here */
		previous = p->objective;
	}
	f->diag.step = p->step;
}

/* Phase 4: final feasibility on the shards; objective, KKT residual, U rotated to its variances. */
static double *
fed_finish(FedFit *f)
{
	int			d = f->d,
				r1 = f->r1;
	const char *params[2] = {f->id, fed_matrix_text(f->p->U, d, r1)};
	double	   *gram = palloc0(sizeof(double) * r1 * r1);
	double	   *grad = palloc0(sizeof(double) * d * r1);
	double	   *Q = palloc(sizeof(double) * r1 * r1);
	double	   *uvariance = palloc(sizeof(double) * r1);
	double	   *U = palloc(sizeof(double) * d * r1);
	double		objective = 0.0,
				gv = 0.0;

	fed_send_active(f, "perpca_shard_finish", 2, params);
	for (int s = 0; s < f->nshards; s++)
	{
		ShardRows  *r;
		int			m1 = r1,
					n1 = r1,
					m2 = d,
					n2 = r1;

		if (!f->active[s])
			continue;
		r = fed_get(&f->sc[s]);
		linalg_axpy(r1 * r1, 1.0 / f->W,
					fed_matrix_parse(&f->sc[s], SHARD_VALUE(r, 0, 0), &m1, &n1, "gram"), gram);
		objective += fed_float_parse(&f->sc[s], SHARD_VALUE(r, 0, 1), "objective");
		linalg_axpy((int64) d * r1, 1.0 / f->W,
					fed_matrix_parse(&f->sc[s], SHARD_VALUE(r, 0, 2), &m2, &n2, "gradient"), grad);
		gv += fed_float_parse(&f->sc[s], SHARD_VALUE(r, 0, 3), "gradient_v");
	}
	f->diag.objective = objective * f->nclients / f->W;
	f->diag.kkt_residual = linalg_dot((int64) d * r1, grad, grad) + gv / f->W;
	/* U <- U Q, Q the eigenvectors of U'(sum_i w_i S_i)U, largest entry of each column positive */
	fit_eigh_top(f->p, r1, gram, r1, uvariance, Q, r1);
	memcpy(U, f->p->U, sizeof(double) * d * r1);
	linalg_gemm(false, false, d, r1, r1, 1.0, U, r1, Q, r1, 0.0, f->p->U, r1);
	linalg_fix_signs(d, r1, f->p->U, r1);
	return uvariance;
}

/* Phase 5: global rows, then each shard's local rows (shard order, then its query order). */
static void
fed_results(FedFit *f, ReturnSetInfo *rsinfo, const double *uvariance)
{
	const char *params[1] = {f->id};

	for (int j = 0; j < f->r1; j++)
		clients_put_component(rsinfo, NULL, "global", j + 1, f->p->U, f->d, f->r1, j,
							  uvariance[j]);
	fed_send_active(f, "perpca_shard_result", 1, params);
	for (int s = 0; s < f->nshards; s++)
	{
		ShardRows  *r;

		if (!f->active[s])
			continue;
		r = fed_get(&f->sc[s]);
		if (r->ncols != 5)
			ereport(ERROR,
					(errcode(ERRCODE_PROTOCOL_VIOLATION),
					 errmsg("shard %d returned %d result columns, expected 5", s + 1, r->ncols)));
		for (int i = 0; i < r->nrows; i++)
		{
			double	   *pc = fed_vector_parse(&f->sc[s], SHARD_VALUE(r, i, 3), f->d, "component");

			CHECK_FOR_INTERRUPTS();
			if (SHARD_VALUE(r, i, 0) == NULL || SHARD_VALUE(r, i, 2) == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_PROTOCOL_VIOLATION),
						 errmsg("shard %d returned a local component without client or number", s + 1)));
			clients_put_component(rsinfo, SHARD_VALUE(r, i, 0), "local",
								  pg_strtoint32(SHARD_VALUE(r, i, 2)), pc, f->d, 1, 0,
								  fed_float_parse(&f->sc[s], SHARD_VALUE(r, i, 4), "variance"));
		}
	}
}

/* The whole federated fit, phase by phase, counting the bytes of each. */
static void
fed_run(FedFit *f, ReturnSetInfo *rsinfo)
{
	static uint32 counter = 0;
	int64		rows,
				mark;
	double	   *mean_sum;
	double	   *uvariance;

	snprintf(f->id, sizeof(f->id), "perpca_%d_%lld_%u", MyProcPid,
			 (long long) GetCurrentTimestamp(), ++counter);
	perpca_report_phase("perpca_fit_federated: connecting to %d shards", f->nshards);
	fed_connect_all(f->sc, f->nshards, f->conninfo);
	mark = fed_bytes(f);
	perpca_report_phase("perpca_fit_federated: opening %d shards", f->nshards);
	mean_sum = fed_open(f, &rows);
	fed_make_problem(f);
	fed_init(f, fed_centre_text(f, mean_sum, rows));
	f->diag.setup_bytes = fed_bytes(f) - mark;
	mark = fed_bytes(f);
	fed_rounds(f);
	f->diag.round_bytes = f->diag.rounds > 0 ? (fed_bytes(f) - mark) / f->diag.rounds : 0;
	mark = fed_bytes(f);
	perpca_report_phase("perpca_fit_federated: writing results");
	uvariance = fed_finish(f);
	fed_results(f, rsinfo, uvariance);
	f->diag.result_bytes = fed_bytes(f) - mark;
	f->diag.n_clients = f->nclients;
	f->diag.dim = f->d;
	for (int s = 0; s < f->nshards; s++)
		if (f->active[s])
			f->diag.n_shards++;
	f->diag.round_binary_bytes = (int64) f->diag.n_shards * (2 * 8 * (int64) f->d * f->r1 + 3 * 8);
}

/*
 * perpca_fit_federated(shards, query, n_global, n_local, ...)
 *   RETURNS TABLE (client, kind, component, pc, variance)
 */
Datum
perpca_fit_federated(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext fitcxt,
				old;
	FedFit	   *f;
	instr_time	start,
				elapsed;

	INSTR_TIME_SET_CURRENT(start);
	InitMaterializedSRF(fcinfo, 0);
	fitcxt = AllocSetContextCreate(CurrentMemoryContext, "perpca_fit_federated",
								   ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(fitcxt);
	f = palloc0(sizeof(FedFit));
	fed_parse(fcinfo, f);
	f->sc = palloc0(sizeof(ShardConn) * f->nshards);
	f->active = palloc0(sizeof(bool) * f->nshards);
	for (int s = 0; s < f->nshards; s++)
		f->sc[s].index = s + 1;
	PG_TRY();
	{
		fed_run(f, rsinfo);
	}
	PG_FINALLY();
	{
		/* no shard connection outlives the call, whatever happened */
		fed_disconnect_all(f->sc, f->nshards);
		perpca_restore_activity();
	}
	PG_END_TRY();
	INSTR_TIME_SET_CURRENT(elapsed);
	INSTR_TIME_SUBTRACT(elapsed, start);
	f->diag.seconds = INSTR_TIME_GET_DOUBLE(elapsed);
	last_fed = f->diag;
	have_last_fed = true;
	MemoryContextSwitchTo(old);
	MemoryContextDelete(fitcxt);
	return (Datum) 0;
}

/* perpca_last_federated_fit(): diagnostics and bytes of the last perpca_fit_federated in this session. */
Datum
perpca_last_federated_fit(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		values[14];
	bool		nulls[14] = {0};

	InitMaterializedSRF(fcinfo, 0);
	if (!have_last_fed)
		return (Datum) 0;
	values[0] = Int32GetDatum(last_fed.rounds);
	values[1] = BoolGetDatum(last_fed.converged);
	values[2] = Float8GetDatum(last_fed.objective);
	values[3] = Float8GetDatum(last_fed.kkt_residual);
	values[4] = Float8GetDatum(last_fed.step);
	values[5] = Int32GetDatum(last_fed.n_shards);
	values[6] = Int32GetDatum(last_fed.n_clients);
	values[7] = Int32GetDatum(last_fed.dim);
	values[8] = Int64GetDatum(last_fed.setup_bytes);
	values[9] = Int64GetDatum(last_fed.round_bytes);
	values[10] = Int64GetDatum(last_fed.result_bytes);
	values[11] = Int64GetDatum(last_fed.round_binary_bytes);
	values[12] = Int64GetDatum(last_fed.stats_binary_bytes);
	values[13] = Float8GetDatum(last_fed.seconds);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}
