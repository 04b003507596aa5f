/*
 * clients.c -- reading the clients of a fit
 *
 * perpca_fit and the federated shards (perpca_shard_open, _init) read the
 * same query, one (client, perpca_stats [, local rank]) row per client, with
 * the same checks and errors, and build the same S_i from it.  The option
 * parsers here are shared by perpca_fit and perpca_fit_federated, and the
 * component rows by perpca_fit and perpca_shard_result.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "clients.h"
#include "linalg.h"
#include "perpca.h"

/* Rows fetched from the query at a time: only these are held twice. */
#define FETCH_ROWS 256

const char *const clients_update_names[2] = {"stgd", "polar"};
const char *const clients_retraction_names[2] = {"polar", "qr"};
const char *const clients_center_names[3] = {"client", "global", "none"};
const char *const clients_weights_names[2] = {"equal", "samples"};

/* ------------------------------------------------------------------------
 * Options
 * ------------------------------------------------------------------------
 */

/* Raise the error for a NULL option. */
void
clients_null_option(const char *option)
{
	ereport(ERROR,
			(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
			 errmsg("option \"%s\" must not be NULL", option)));
}

/* Index of value among names, or an error listing the valid values. */
int
clients_choice(const char *value, const char *option, const char *const *names, int nnames)
{
	StringInfoData valid;

	for (int i = 0; i < nnames; i++)
		if (strcmp(value, names[i]) == 0)
			return i;
	initStringInfo(&valid);
	for (int i = 0; i < nnames; i++)
		appendStringInfo(&valid, "%s\"%s\"", i == 0 ? "" : (i == nnames - 1 ? " or " : ", "),
						 names[i]);
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid value for option \"%s\": \"%s\"", option, value),
			 errhint("Valid values are %s.", valid.data)));
	return -1;					/* keep compiler quiet */
}

/* Text argument argno, or null_value_not_allowed naming the option. */
char *
clients_text_arg(FunctionCallInfo fcinfo, int argno, const char *option)
{
	if (PG_ARGISNULL(argno))
		clients_null_option(option);
	return text_to_cstring(PG_GETARG_TEXT_PP(argno));
}

/* Index of the text argument among names, or an error listing the valid values. */
int
clients_choice_arg(FunctionCallInfo fcinfo, int argno, const char *option,
				   const char *const *names, int nnames)
{
	return clients_choice(clients_text_arg(fcinfo, argno, option), option, names, nnames);
}

/* A non-NULL int4 argument that must be >= min. */
int
clients_int_arg(FunctionCallInfo fcinfo, int argno, const char *option, int min)
{
	int			value;

	if (PG_ARGISNULL(argno))
		clients_null_option(option);
	value = PG_GETARG_INT32(argno);
	if (value < min)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"%s\" must be at least %d, got %d", option, min, value)));
	return value;
}

/* A non-NULL, finite, non-negative float8 argument. */
double
clients_nonnegative_arg(FunctionCallInfo fcinfo, int argno, const char *option)
{
	double		value;

	if (PG_ARGISNULL(argno))
		clients_null_option(option);
	value = PG_GETARG_FLOAT8(argno);
	if (!isfinite(value) || value < 0.0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"%s\" must be a finite number >= 0", option)));
	return value;
}

/* The step: 0 for NULL (derived from the spectrum), else a finite number > 0. */
double
clients_step_arg(FunctionCallInfo fcinfo, int argno)
{
	double		step;

	if (PG_ARGISNULL(argno))
		return 0.0;
	step = PG_GETARG_FLOAT8(argno);
	if (!isfinite(step) || step <= 0.0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"step\" must be a finite number > 0"),
				 errhint("Pass NULL to derive the step from the spectrum.")));
	return step;
}

/* ------------------------------------------------------------------------
 * Reading the query
 * ------------------------------------------------------------------------
 */

/* OID of the perpca_stats type in the schema of the calling function. */
static Oid
stats_type_oid(FunctionCallInfo fcinfo)
{
	Oid			nsp = get_func_namespace(fcinfo->flinfo->fn_oid);
	Oid			typid = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
										CStringGetDatum("perpca_stats"),
										ObjectIdGetDatum(nsp));

	if (!OidIsValid(typid))
		elog(ERROR, "type perpca_stats not found next to the calling function");
	return typid;
}

/* Check the shape of the query result: (client, perpca_stats [, integer]). */
static void
check_result_shape(TupleDesc desc, Oid stats_type)
{
	if (desc->natts < 2 || desc->natts > 3 ||
		TupleDescAttr(desc, 1)->atttypid != stats_type ||
		(desc->natts == 3 && TupleDescAttr(desc, 2)->atttypid != INT4OID &&
		 TupleDescAttr(desc, 2)->atttypid != INT2OID &&
		 TupleDescAttr(desc, 2)->atttypid != INT8OID))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("query must return columns (client, perpca_stats) or (client, perpca_stats, integer)"),
				 errdetail("The query returned %d column(s)%s.", desc->natts,
						   desc->natts >= 2 && TupleDescAttr(desc, 1)->atttypid != stats_type
						   ? " and its second column is not of type perpca_stats" : ""),
				 errhint("Use a query like SELECT group_id, perpca_stats(x) FROM t GROUP BY group_id.")));
}

/* The optional third column: this client's number of local components (NULL = n_local). */
static int
client_local_rank(HeapTuple tup, TupleDesc desc, const char *name, int n_local)
{
	bool		isnull;
	Datum		v;
	int64		r2;

	if (desc->natts < 3)
		return n_local;
	v = SPI_getbinval(tup, desc, 3, &isnull);
	if (isnull)
		return n_local;
	switch (TupleDescAttr(desc, 2)->atttypid)
	{
		case INT2OID:
			r2 = DatumGetInt16(v);
			break;
		case INT4OID:
			r2 = DatumGetInt32(v);
			break;
		default:
			r2 = DatumGetInt64(v);
			break;
	}
	if (r2 < 0 || r2 > PERPCA_MAX_DIM)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("client \"%s\" asks for %lld local components", name, (long long) r2),
				 errhint("The third column must be between 0 and the dimension minus n_global.")));
	return (int) r2;
}

/* Copy one result row into cxt: client name, stats value, local rank. */
static void
read_client(HeapTuple tup, TupleDesc desc, int n_local, MemoryContext cxt, ClientInput *out)
{
	bool		isnull;
	Datum		v;
	Oid			outfunc;
	bool		isvarlena;
	MemoryContext old;

	v = SPI_getbinval(tup, desc, 1, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("client column of the query must not be NULL")));
	getTypeOutputInfo(TupleDescAttr(desc, 0)->atttypid, &outfunc, &isvarlena);
	old = MemoryContextSwitchTo(cxt);
	out->name = OidOutputFunctionCall(outfunc, v);
	MemoryContextSwitchTo(old);
	v = SPI_getbinval(tup, desc, 2, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("perpca_stats of client \"%s\" is NULL", out->name)));
	old = MemoryContextSwitchTo(cxt);
	out->stats = (PerpcaStats *) PG_DETOAST_DATUM_COPY(v);
	MemoryContextSwitchTo(old);
	perpca_stats_validate(out->stats);
	out->r2 = client_local_rank(tup, desc, out->name, n_local);
}

/* Open query as a cursor, or the error for a query that returns no rows. */
static Portal
open_query(const char *query)
{
	SPIPlanPtr	plan = SPI_prepare(query, 0, NULL);

	if (plan == NULL || !SPI_is_cursor_plan(plan))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("query must return rows (client, perpca_stats)"),
				 errdetail("The query must be a single SELECT, VALUES or TABLE statement.")));
	return SPI_cursor_open(NULL, plan, NULL, NULL, true);
}

/*
 * Run the query through a cursor and copy its rows into cxt, a batch at a
 * time, so that the clients' statistics are in memory only once.
 */
ClientInput *
clients_read(FunctionCallInfo fcinfo, const char *query, int n_local, MemoryContext cxt,
			 int *nclients)
{
	Oid			stats_type = stats_type_oid(fcinfo);
	ClientInput *clients = NULL;
	int			n = 0,
				cap = 0;
	Portal		portal;

	SPI_connect();
	portal = open_query(query);
	for (;;)
	{
		SPI_cursor_fetch(portal, true, FETCH_ROWS);
		check_result_shape(SPI_tuptable->tupdesc, stats_type);
		if (SPI_processed == 0)
			break;
		if (n + (int) SPI_processed > cap)
		{
			cap = Max(cap * 2, n + (int) SPI_processed);
			clients = clients ? repalloc(clients, sizeof(ClientInput) * cap)
				: MemoryContextAlloc(cxt, sizeof(ClientInput) * cap);
		}
		for (uint64 i = 0; i < SPI_processed; i++, n++)
		{
			CHECK_FOR_INTERRUPTS();
			read_client(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, n_local, cxt, &clients[n]);
		}
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	SPI_finish();
	*nclients = n;
	return clients ? clients : MemoryContextAllocZero(cxt, sizeof(ClientInput));
}

/* Every client must have rows, one common dimension, and room for its components. */
void
clients_check(const ClientInput *in, int n, int n_global)
{
	int			d = n > 0 ? in[0].stats->dim : 0;

	for (int i = 0; i < n; i++)
	{
		if (in[i].stats->dim != d)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("client \"%s\" has dimension %d, expected %d",
							in[i].name, in[i].stats->dim, d),
					 errdetail("All clients must have the same dimension (that of client \"%s\").",
							   in[0].name)));
		if (in[i].stats->n <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("client \"%s\" has no rows", in[i].name)));
		if (n_global + in[i].r2 > d)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("n_global + local components (%d + %d) exceed the dimension %d for client \"%s\"",
							n_global, in[i].r2, d, in[i].name)));
	}
}

/* ------------------------------------------------------------------------
 * The clients' matrices
 * ------------------------------------------------------------------------
 */

/* sum_i n_i mean_i (d = the clients' dimension) into mean_sum; returns sum_i n_i. */
double
clients_mean_sum(const ClientInput *in, int n, double *mean_sum)
{
	int			d = n > 0 ? in[0].stats->dim : 0;
	double		total = 0.0;

	memset(mean_sum, 0, sizeof(double) * d);
	for (int i = 0; i < n; i++)
	{
		total += (double) in[i].stats->n;
		linalg_axpy(d, (double) in[i].stats->n, PERPCA_STATS_MEAN(in[i].stats), mean_sum);
		linalg_axpy(d, (double) in[i].stats->n, PERPCA_STATS_MEAN_LO(in[i].stats), mean_sum);
	}
	return total;
}

/*
 * S_i about centre (NULL: the client's own mean): a thin value keeps its rows
 * (S_i = Y'Y/n + delta delta', never formed), a dense one becomes a d x d matrix.
 */
static void
client_matrix(FitClient *c, const PerpcaStats *stats, const double *centre)
{
	int			d = stats->dim;
	double	   *S;

	if (perpca_stats_thin_rows(stats) != NULL)
	{
		c->Y = perpca_stats_thin_rows(stats);
		c->nrows = (int) stats->n;
		c->yscale = 1.0 / (double) stats->n;
		if (centre != NULL)
		{
			double	   *delta = palloc(sizeof(double) * d);

			perpca_stats_offset(stats, centre, delta);
			c->delta = delta;
		}
		return;
	}
	S = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * d * d);
	perpca_stats_moment(stats, centre, S);
	c->S = S;
}

/* Each client's S_i about centre, its local rank, and weight n_i (samples) or 1. */
FitClient *
clients_build(const ClientInput *in, int n, const double *centre, bool sample_weights)
{
	FitClient  *clients = palloc0(sizeof(FitClient) * Max(n, 1));

	for (int i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		client_matrix(&clients[i], in[i].stats, centre);
		clients[i].r2 = in[i].r2;
		clients[i].weight = sample_weights ? (double) in[i].stats->n : 1.0;
	}
	return clients;
}

/* ------------------------------------------------------------------------
 * Result rows
 * ------------------------------------------------------------------------
 */

/* Append one (client, kind, component, pc, variance) row; column j of A (d rows, stride lda). */
void
clients_put_component(ReturnSetInfo *rsinfo, const char *client, const char *kind,
					  int component, const double *A, int d, int lda, int j, double variance)
{
	Datum		values[5];
	bool		nulls[5] = {client == NULL, false, false, false, false};
	double	   *buf = palloc(sizeof(double) * Max(d, 1));

	linalg_copy(d, 1, A + j, lda, buf, 1);
	values[0] = client ? CStringGetTextDatum(client) : (Datum) 0;
	values[1] = CStringGetTextDatum(kind);
	values[2] = Int32GetDatum(component);
	values[3] = PointerGetDatum(perpca_vector_build(buf, d));
	values[4] = Float8GetDatum(variance);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	pfree(buf);
}

/* Each client's local rows in query order: W[:, lfirst:k], numbered from 1. */
void
clients_put_local(ReturnSetInfo *rsinfo, const FitProblem *p, const ClientInput *in)
{
	for (int i = 0; i < p->nclients; i++)
	{
		const FitClient *c = &p->clients[i];

		for (int j = c->lfirst; j < c->k; j++)
			clients_put_component(rsinfo, in[i].name, "local", j - c->lfirst + 1, c->W, p->d,
								  c->k, j, c->variance[j]);
	}
}
