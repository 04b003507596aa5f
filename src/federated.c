/*
 * federated.c -- PerPCA rounds where the data live (paper, Algorithm 2 over
 * the network)
 *
 * Shard side.  perpca_shard_open() runs the user's query on the shard and
 * keeps its clients in a backend-local state (a memory context under
 * TopMemoryContext, found by a fit id).  perpca_shard_init() builds the S_i
 * and returns what the personalized disPCA start needs, perpca_shard_round()
 * runs fit_client_step() for every local client against the U it is given
 * and returns the weighted sum of the clients' U_i, perpca_shard_finish()
 * and perpca_shard_result() make the local components feasible and emit
 * them.  The state dies with perpca_shard_close() or with the backend.
 *
 * Coordinator side.  perpca_fit_federated() opens one libpq connection per
 * shard for the whole fit (so the same shard backend serves every round),
 * sends each phase to every shard before waiting for any (the shards work
 * concurrently), and runs the server step (fit_server_step(): average, then
 * retract) itself.  Only U (d x n_global) goes out and one d x n_global sum
 * per shard comes back each round.  Waits are interruptible and every
 * connection is closed (a busy one cancelled first) on success and on error.
 */
#include "postgres.h"

#include <math.h>

#include "libpq-fe.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "fit.h"
#include "linalg.h"
#include "perpca.h"
#include "stats.h"

PG_FUNCTION_INFO_V1(perpca_shard_open);
PG_FUNCTION_INFO_V1(perpca_shard_init);
PG_FUNCTION_INFO_V1(perpca_shard_round);
PG_FUNCTION_INFO_V1(perpca_shard_finish);
PG_FUNCTION_INFO_V1(perpca_shard_result);
PG_FUNCTION_INFO_V1(perpca_shard_close);
PG_FUNCTION_INFO_V1(perpca_fit_federated);
PG_FUNCTION_INFO_V1(perpca_last_federated_fit);

/* The same step rule as fit.c: 0.5 / lambda_max, adapted within [0.01, 16] / lambda_max. */
#define FED_STEP_SCALE 0.5
#define FED_STEP_MIN_SCALE 0.01
#define FED_STEP_MAX_SCALE 16.0
#define FED_MOMENTUM 0.5
/* Rows fetched from the shard's query at a time. */
#define FED_FETCH_ROWS 256

static const char *const fed_update_names[] = {"stgd", "polar"};
static const char *const fed_retraction_names[] = {"polar", "qr"};
static const char *const fed_init_names[] = {"dispca", "qu"};
static const char *const fed_center_names[] = {"client", "global", "none"};
static const char *const fed_weights_names[] = {"equal", "samples"};

/* ------------------------------------------------------------------------
 * Shared helpers
 * ------------------------------------------------------------------------
 */

/* Index of a text value among names, or invalid_parameter_value listing them. */
static int
fed_choice(const char *value, const char *option, const char *const *names, int nnames)
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
static char *
fed_text_arg(FunctionCallInfo fcinfo, int argno, const char *option)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("option \"%s\" must not be NULL", option)));
	return text_to_cstring(PG_GETARG_TEXT_PP(argno));
}

/* Orthonormalize the m x n block A (stride lda): polar through the Gram matrix, SVD when ill-conditioned, or QR. */
static void
fed_retract(FitRetraction how, int m, int n, double *A, int lda)
{
	double	   *work = palloc(sizeof(double) * Max(LINALG_POLAR_WORK(m, n),
												   LINALG_POLAR_GRAM_WORK(m, n)));
	int			info;

	if (how == FIT_RETRACT_QR)
		info = linalg_qr_orth(m, n, A, lda, work);
	else if (linalg_polar_gram(m, n, A, lda, work) == 0)
		info = 0;
	else
		info = linalg_polar(m, n, A, lda, work);
	pfree(work);
	if (info != 0)
		elog(ERROR, "retraction failed (LAPACK info %d)", info);
}

/* Top k eigenpairs of the symmetric d x d A (destroyed), vectors as columns of Z (stride ldz). */
static void
fed_eigh_top(int d, double *A, int k, double *values, double *Z, int ldz)
{
	double	   *work = palloc(sizeof(double) * LINALG_EIGH_WORK(d, k));
	int			info = linalg_eigh_top(d, A, k, values, Z, ldz, work);

	pfree(work);
	if (info != 0)
		elog(ERROR, "symmetric eigensolver failed (LAPACK info %d)", info);
}

/* Top k left singular vectors of A (m x n, destroyed) into Z (stride ldz), singular values into sigma. */
static void
fed_left_singular(int m, int n, double *A, int k, double *Z, int ldz, double *sigma)
{
	double	   *work = MemoryContextAllocHuge(CurrentMemoryContext,
											  sizeof(double) * LINALG_LSV_WORK(m, n));
	int			info = linalg_left_singular(m, n, A, k, Z, ldz, sigma, work);

	pfree(work);
	if (info != 0)
		elog(ERROR, "singular value decomposition failed (LAPACK info %d)", info);
}

/* ||P_A - P_B||_F for orthonormal m x r blocks A and B (both stride r). */
static double
fed_projector_distance(int m, int r, const double *A, const double *B)
{
	double	   *AtB = palloc(sizeof(double) * Max(r * r, 1));
	double	   *D = palloc(sizeof(double) * Max(m * r, 1));
	double		dist;

	linalg_gemm(true, false, r, r, m, 1.0, A, r, B, r, 0.0, AtB, r);
	memcpy(D, B, sizeof(double) * m * r);
	linalg_gemm(false, false, m, r, r, -1.0, A, r, AtB, r, 1.0, D, r);
	dist = sqrt(2.0 * linalg_dot((int64) m * r, D, D));
	pfree(AtB);
	pfree(D);
	return dist;
}

/* Build a composite result from values (no NULLs) for a function returning a row type. */
static Datum
fed_row(FunctionCallInfo fcinfo, Datum *values, bool *nulls)
{
	TupleDesc	desc;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	desc = BlessTupleDesc(desc);
	return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
}

/* ------------------------------------------------------------------------
 * Shard side: the state of one fit in this backend
 * ------------------------------------------------------------------------
 */

/* One client's top k_i eigenpairs, for the start. */
typedef struct ShardPCs
{
	double	   *L;				/* d x k_i */
	double	   *lambda;			/* k_i */
} ShardPCs;

typedef struct ShardFit
{
	struct ShardFit *next;
	char	   *id;
	MemoryContext cxt;			/* everything below lives here */
	int			n;				/* clients */
	int			d;
	int			r1;
	bool		sample_weights;
	char	  **names;
	PerpcaStats **stats;
	int		   *r2;
	FitProblem *p;				/* NULL until perpca_shard_init */
	ShardPCs   *pcs;
	FitUpdate	update;
	FitRetraction retraction;
	bool		v_ready;		/* V_i set from the PCs (first round) */
	bool		finished;		/* perpca_shard_finish ran */
} ShardFit;

static ShardFit *shard_fits = NULL;

/* The open fit with this id, or NULL. */
static ShardFit *
shard_fit_find(const char *id)
{
	for (ShardFit *sf = shard_fits; sf != NULL; sf = sf->next)
		if (strcmp(sf->id, id) == 0)
			return sf;
	return NULL;
}

/* The open fit with this id, or undefined_object. */
static ShardFit *
shard_fit_get(FunctionCallInfo fcinfo)
{
	char	   *id = fed_text_arg(fcinfo, 0, "fit_id");
	ShardFit   *sf = shard_fit_find(id);

	if (sf == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("federated fit \"%s\" is not open in this session", id),
				 errhint("perpca_shard_open must run first, in the same session.")));
	return sf;
}

/* The open fit with this id, which perpca_shard_init must have prepared. */
static ShardFit *
shard_fit_ready(FunctionCallInfo fcinfo)
{
	ShardFit   *sf = shard_fit_get(fcinfo);

	if (sf->p == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("federated fit \"%s\" has not been initialized", sf->id),
				 errhint("Call perpca_shard_init first.")));
	return sf;
}

/* Unlink a fit and free everything it holds. */
static void
shard_fit_free(ShardFit *sf)
{
	ShardFit  **link = &shard_fits;

	while (*link != sf)
		link = &(*link)->next;
	*link = sf->next;
	MemoryContextDelete(sf->cxt);
}

/* OID of perpca_stats in the schema of the calling function. */
static Oid
fed_stats_type(FunctionCallInfo fcinfo)
{
	Oid			nsp = get_func_namespace(fcinfo->flinfo->fn_oid);
	Oid			typid = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
										CStringGetDatum("perpca_stats"),
										ObjectIdGetDatum(nsp));

	if (!OidIsValid(typid))
		elog(ERROR, "type perpca_stats not found next to perpca_shard_open");
	return typid;
}

/* The query must return (client, perpca_stats [, integer]). */
static void
shard_check_shape(TupleDesc desc, Oid stats_type)
{
	Oid			third = desc->natts == 3 ? TupleDescAttr(desc, 2)->atttypid : INT4OID;

	if (desc->natts < 2 || desc->natts > 3 || TupleDescAttr(desc, 1)->atttypid != stats_type ||
		(third != INT2OID && third != INT4OID && third != INT8OID))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("query must return columns (client, perpca_stats) or (client, perpca_stats, integer)"),
				 errhint("Use a query like SELECT group_id, perpca_stats(x) FROM t GROUP BY group_id.")));
}

/* Local rank of a row: the optional third column, n_local when absent or NULL. */
static int
shard_local_rank(HeapTuple tup, TupleDesc desc, const char *name, int n_local)
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
				 errmsg("client \"%s\" asks for %lld local components", name, (long long) r2)));
	return (int) r2;
}

/* Copy row i of the SPI result into client slot `at` of sf (in sf->cxt), and check it. */
static void
shard_read_row(ShardFit *sf, HeapTuple tup, TupleDesc desc, int n_local, int at)
{
	bool		isnull;
	Datum		v;
	Oid			outfunc;
	bool		isvarlena;
	MemoryContext old;
	PerpcaStats *s;

	v = SPI_getbinval(tup, desc, 1, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("client column of the query must not be NULL")));
	getTypeOutputInfo(TupleDescAttr(desc, 0)->atttypid, &outfunc, &isvarlena);
	old = MemoryContextSwitchTo(sf->cxt);
	sf->names[at] = OidOutputFunctionCall(outfunc, v);
	v = SPI_getbinval(tup, desc, 2, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("perpca_stats of client \"%s\" is NULL", sf->names[at])));
	s = sf->stats[at] = (PerpcaStats *) PG_DETOAST_DATUM_COPY(v);
	MemoryContextSwitchTo(old);
	perpca_stats_validate(s);
	sf->r2[at] = shard_local_rank(tup, desc, sf->names[at], n_local);
	if (at > 0 && s->dim != sf->stats[0]->dim)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("client \"%s\" has dimension %d, expected %d",
						sf->names[at], s->dim, sf->stats[0]->dim)));
	if (s->n <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("client \"%s\" has no rows", sf->names[at])));
	if (sf->r1 + sf->r2[at] > s->dim)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("n_global + local components (%d + %d) exceed the dimension %d for client \"%s\"",
						sf->r1, sf->r2[at], s->dim, sf->names[at])));
}

/* Grow the client arrays of sf to hold at least n clients. */
static void
shard_grow(ShardFit *sf, int n, int *cap)
{
	if (n <= *cap)
		return;
	*cap = Max(*cap * 2, n);
	if (sf->names == NULL)
	{
		sf->names = MemoryContextAlloc(sf->cxt, sizeof(char *) * *cap);
		sf->stats = MemoryContextAlloc(sf->cxt, sizeof(PerpcaStats *) * *cap);
		sf->r2 = MemoryContextAlloc(sf->cxt, sizeof(int) * *cap);
		return;
	}
	sf->names = repalloc(sf->names, sizeof(char *) * *cap);
	sf->stats = repalloc(sf->stats, sizeof(PerpcaStats *) * *cap);
	sf->r2 = repalloc(sf->r2, sizeof(int) * *cap);
}

/* Run the query through a cursor and keep its clients in sf. */
static void
shard_read_clients(FunctionCallInfo fcinfo, ShardFit *sf, const char *query, int n_local)
{
	Oid			stats_type = fed_stats_type(fcinfo);
	SPIPlanPtr	plan;
	Portal		portal;
	int			cap = 0;

	SPI_connect();
	plan = SPI_prepare(query, 0, NULL);
	if (plan == NULL || !SPI_is_cursor_plan(plan))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("query must return rows (client, perpca_stats)"),
				 errdetail("The query must be a single SELECT, VALUES or TABLE statement.")));
	portal = SPI_cursor_open(NULL, plan, NULL, NULL, true);
	for (;;)
	{
		SPI_cursor_fetch(portal, true, FED_FETCH_ROWS);
		shard_check_shape(SPI_tuptable->tupdesc, stats_type);
		if (SPI_processed == 0)
			break;
		shard_grow(sf, sf->n + (int) SPI_processed, &cap);
		for (uint64 i = 0; i < SPI_processed; i++, sf->n++)
		{
			CHECK_FOR_INTERRUPTS();
			shard_read_row(sf, SPI_tuptable->vals[i], SPI_tuptable->tupdesc, n_local, sf->n);
		}
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	SPI_finish();
	sf->d = sf->n > 0 ? sf->stats[0]->dim : 0;
}

/*
 * perpca_shard_open(fit_id, query, n_global, n_local, weights)
 *   RETURNS (n_clients, dim, n_rows, mean_sum, stats_bytes)
 * Read this shard's clients; mean_sum = sum_i n_i mean_i (for center 'global').
 */
Datum
perpca_shard_open(PG_FUNCTION_ARGS)
{
	char	   *id = fed_text_arg(fcinfo, 0, "fit_id");
	char	   *query = fed_text_arg(fcinfo, 1, "query");
	ShardFit   *sf;
	MemoryContext cxt;
	double	   *mean_sum;
	int64		rows = 0,
				bytes = 0;
	Datum		values[5];
	bool		nulls[5] = {0};

	if (PG_ARGISNULL(2) || PG_ARGISNULL(3) || PG_GETARG_INT32(2) < 1 || PG_GETARG_INT32(3) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("n_global must be at least 1 and n_local at least 0")));
	if (shard_fit_find(id) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("federated fit \"%s\" is already open in this session", id)));
	cxt = AllocSetContextCreate(TopMemoryContext, "perpca shard fit", ALLOCSET_DEFAULT_SIZES);
	sf = MemoryContextAllocZero(cxt, sizeof(ShardFit));
	sf->cxt = cxt;
	sf->id = MemoryContextStrdup(cxt, id);
	sf->r1 = PG_GETARG_INT32(2);
	sf->sample_weights = fed_choice(fed_text_arg(fcinfo, 4, "weights"), "weights",
									fed_weights_names, lengthof(fed_weights_names)) == 1;
	sf->next = shard_fits;
	shard_fits = sf;
	PG_TRY();
	{
		shard_read_clients(fcinfo, sf, query, PG_GETARG_INT32(3));
	}
	PG_CATCH();
	{
		shard_fit_free(sf);
		PG_RE_THROW();
	}
	PG_END_TRY();
	mean_sum = palloc0(sizeof(double) * Max(sf->d, 1));
	for (int i = 0; i < sf->n; i++)
	{
		rows += sf->stats[i]->n;
		bytes += VARSIZE(sf->stats[i]);
		linalg_axpy(sf->d, (double) sf->stats[i]->n, PERPCA_STATS_MEAN(sf->stats[i]), mean_sum);
		linalg_axpy(sf->d, (double) sf->stats[i]->n, PERPCA_STATS_MEAN_LO(sf->stats[i]), mean_sum);
	}
	values[0] = Int32GetDatum(sf->n);
	values[1] = Int32GetDatum(sf->d);
	values[2] = Int64GetDatum(rows);
	values[3] = PointerGetDatum(perpca_vector_build(mean_sum, sf->d));
	values[4] = Int64GetDatum(bytes);
	PG_RETURN_DATUM(fed_row(fcinfo, values, nulls));
}

/* S_i about centre (NULL: the client's own mean), thin or dense as perpca_fit builds it. */
static void
shard_client_matrix(FitClient *c, const PerpcaStats *stats, const double *centre)
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

/* Top k eigenpairs of S_i (dense: eigensolver; thin: SVD of the d x m factor when k <= m). */
static void
shard_client_top(const FitClient *c, int d, int k, double *values, double *Z)
{
	int			m = c->nrows + (c->delta != NULL ? 1 : 0);
	double	   *A;

	if (c->S == NULL && k <= Min(d, m))
	{
		double		scale = sqrt(c->yscale);

		A = palloc(sizeof(double) * d * m);
		for (int j = 0; j < d; j++)
		{
			for (int r = 0; r < c->nrows; r++)
				A[(int64) j * m + r] = scale * c->Y[(int64) r * d + j];
			if (c->delta != NULL)
				A[(int64) j * m + c->nrows] = c->delta[j];
		}
		fed_left_singular(d, m, A, k, Z, k, values);
		for (int j = 0; j < k; j++)
			values[j] *= values[j];
		pfree(A);
		return;
	}
	A = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * d * d);
	if (c->S != NULL)
		memcpy(A, c->S, sizeof(double) * d * d);
	else
	{
		memset(A, 0, sizeof(double) * d * d);
		linalg_syrk_upper(d, c->nrows, c->yscale, c->Y, A);
		if (c->delta != NULL)
			linalg_syr_upper(d, 1.0, c->delta, A);
		linalg_symmetrize_upper(d, A);
	}
	fed_eigh_top(d, A, k, values, Z, k);
	pfree(A);
}

/* Build the clients' S_i and the problem (in sf->cxt), and each client's top k_i eigenpairs. */
static void
shard_prepare(ShardFit *sf, const double *centre)
{
	FitClient  *clients = palloc0(sizeof(FitClient) * sf->n);

	for (int i = 0; i < sf->n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		shard_client_matrix(&clients[i], sf->stats[i], centre);
		clients[i].r2 = sf->r2[i];
		clients[i].weight = sf->sample_weights ? (double) sf->stats[i]->n : 1.0;
	}
	sf->p = fit_problem_create(sf->d, sf->r1, sf->n, clients);
	sf->pcs = palloc(sizeof(ShardPCs) * sf->n);
	for (int i = 0; i < sf->n; i++)
	{
		FitClient  *c = &sf->p->clients[i];

		CHECK_FOR_INTERRUPTS();
		c->lfirst = sf->r1;
		sf->pcs[i].L = palloc(sizeof(double) * sf->d * c->k);
		sf->pcs[i].lambda = palloc(sizeof(double) * c->k);
		shard_client_top(c, sf->d, c->k, sf->pcs[i].lambda, sf->pcs[i].L);
	}
}

/*
 * The shard's part of the stacked-PC start, compressed: B (d x q) with
 * B B' = sum_i L_i D_i L_i' over its clients (D_i = I for dispca,
 * w_i lambda_ij for qu), q = min(d, sum k_i).  Returns B, sets *q.
 */
static double *
shard_start_basis(ShardFit *sf, bool qu, int *q)
{
	int			d = sf->d,
				K = 0,
				off = 0;
	double	   *B,
			   *Z;

	for (int i = 0; i < sf->n; i++)
		K += sf->p->clients[i].k;
	B = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * d * K);
	for (int i = 0; i < sf->n; i++)
	{
		FitClient  *c = &sf->p->clients[i];

		linalg_copy(d, c->k, sf->pcs[i].L, c->k, B + off, K);
		if (qu)
			for (int j = 0; j < c->k; j++)
				linalg_scale_column(d, B, K, off + j,
									sqrt(c->weight * Max(sf->pcs[i].lambda[j], 0.0)));
		off += c->k;
	}
	*q = K;
	if (K <= d)
		return B;
	/* more columns than rows: B B' = Z diag(sigma^2) Z', send Z diag(sigma) */
	Z = palloc(sizeof(double) * d * d);
	{
		double	   *sigma = palloc(sizeof(double) * d);

		fed_left_singular(d, K, B, d, Z, d, sigma);
		for (int j = 0; j < d; j++)
			linalg_scale_column(d, Z, d, j, sigma[j]);
	}
	*q = d;
	return Z;
}

/*
 * perpca_shard_init(fit_id, centre, init, update, retraction)
 *   RETURNS (weight, lambda_max, basis)
 * Build the S_i about centre (NULL: each client's own mean), return the sum
 * of the client weights, max_i lambda_max(S_i) and the start basis.
 */
Datum
perpca_shard_init(PG_FUNCTION_ARGS)
{
	ShardFit   *sf = shard_fit_get(fcinfo);
	double	   *centre = NULL;
	bool		qu;
	double		weight = 0.0,
				lmax = 0.0,
			   *B;
	int			q,
				len;
	Datum		values[3];
	bool		nulls[3] = {0};
	MemoryContext old;

	if (sf->p != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("federated fit \"%s\" is already initialized", sf->id)));
	if (sf->n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("federated fit \"%s\" has no clients on this shard", sf->id)));
	if (!PG_ARGISNULL(1))
	{
		centre = perpca_vector_arg(PG_GETARG_ARRAYTYPE_P(1), &len, "centre");
		if (len != sf->d)
			perpca_dim_mismatch(sf->d, len, "centre");
	}
	qu = fed_choice(fed_text_arg(fcinfo, 2, "init"), "init", fed_init_names,
					lengthof(fed_init_names)) == 1;
	sf->update = (FitUpdate) fed_choice(fed_text_arg(fcinfo, 3, "update"), "update",
										fed_update_names, lengthof(fed_update_names));
	sf->retraction = (FitRetraction) fed_choice(fed_text_arg(fcinfo, 4, "retraction"), "retraction",
												fed_retraction_names,
												lengthof(fed_retraction_names));
	old = MemoryContextSwitchTo(sf->cxt);
	PG_TRY();
	{
		shard_prepare(sf, centre);
	}
	PG_CATCH();
	{
		sf->p = NULL;			/* a half-built problem is unusable; its memory goes with the fit */
		PG_RE_THROW();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	for (int i = 0; i < sf->n; i++)
	{
		weight += sf->p->clients[i].weight;
		lmax = Max(lmax, sf->pcs[i].lambda[0]);
	}
	B = shard_start_basis(sf, qu, &q);
	values[0] = Float8GetDatum(weight);
	values[1] = Float8GetDatum(lmax);
	values[2] = PointerGetDatum(perpca_matrix_build(B, sf->d, q));
	PG_RETURN_DATUM(fed_row(fcinfo, values, nulls));
}

/* Read U (d x r1, 2-D float8[]) for fit sf from argument argno. */
static double *
shard_u_arg(FunctionCallInfo fcinfo, ShardFit *sf, int argno)
{
	int			rows,
				cols;
	double	   *U = perpca_matrix_arg(PG_GETARG_ARRAYTYPE_P(argno), &rows, &cols, "U");

	if (rows != sf->d || cols != sf->r1)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("U is %d x %d, expected %d x %d", rows, cols, sf->d, sf->r1)));
	return U;
}

/*
 * V_i from the client's own PCs given U, as perpca_fit starts it: top r2_i
 * left singular vectors of (I - P_U) L_i D_i, D_i = sqrt(lambda_ij) + a tiny floor.
 */
static void
shard_start_local(ShardFit *sf, FitClient *c, const ShardPCs *pcs)
{
	int			d = sf->d,
				r1 = sf->r1,
				k = c->k;
	double	   *T,
			   *UtT;
	double		floor = 1e-8 * sqrt(Max(pcs->lambda[0], 0.0)) + 1e-300;

	if (c->r2 == 0)
		return;
	T = palloc(sizeof(double) * d * k);
	UtT = palloc(sizeof(double) * r1 * k);
	memcpy(T, pcs->L, sizeof(double) * d * k);
	for (int j = 0; j < k; j++)
		linalg_scale_column(d, T, k, j, sqrt(Max(pcs->lambda[j], 0.0)) + floor);
	linalg_gemm(true, false, r1, k, d, 1.0, sf->p->U, r1, T, k, 0.0, UtT, k);
	linalg_gemm(false, false, d, k, r1, -1.0, sf->p->U, r1, UtT, k, 1.0, T, k);
	fed_left_singular(d, k, T, c->r2, c->W + r1, k, NULL);
	pfree(T);
	pfree(UtT);
}

/* Client steps of one round against U; sums into usum (d x r1), objective, weight; max change. */
static void
shard_round(ShardFit *sf, double step, double *usum, double *objective, double *weight,
			double *change)
{
	FitProblem *p = sf->p;

	for (int i = 0; i < sf->n; i++)
	{
		FitClient  *c = &p->clients[i];

		CHECK_FOR_INTERRUPTS();
		if (!sf->v_ready)
			shard_start_local(sf, c, &sf->pcs[i]);
		fit_client_step(p, c, sf->update, sf->retraction, step);
		linalg_axpy((int64) sf->d * sf->r1, c->weight, c->Ui, usum);
		*objective += c->weight * c->objective;
		*weight += c->weight;
		*change = Max(*change, c->change);
	}
	sf->v_ready = true;
}

/*
 * perpca_shard_round(fit_id, u, step) RETURNS (u_sum, weight, objective, change)
 * One round's client steps: sum_i w_i U_i, sum_i w_i, sum_i w_i f_i and the
 * largest change of a local projector (w_i = 1, or n_i for weights 'samples').
 */
Datum
perpca_shard_round(PG_FUNCTION_ARGS)
{
	ShardFit   *sf = shard_fit_ready(fcinfo);
	double	   *U = shard_u_arg(fcinfo, sf, 1);
	double		step = PG_GETARG_FLOAT8(2);
	double	   *usum = palloc0(sizeof(double) * sf->d * sf->r1);
	double		objective = 0.0,
				weight = 0.0,
				change = 0.0;
	Datum		values[4];
	bool		nulls[4] = {0};
	MemoryContext old;

	if (!isfinite(step) || step <= 0.0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("step must be a finite number > 0")));
	if (sf->finished)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("federated fit \"%s\" is already finished", sf->id)));
	/* fit.c keeps its workspace in the problem: allocate it where the problem lives */
	old = MemoryContextSwitchTo(sf->cxt);
	memcpy(sf->p->U, U, sizeof(double) * sf->d * sf->r1);
	shard_round(sf, step, usum, &objective, &weight, &change);
	MemoryContextSwitchTo(old);
	values[0] = PointerGetDatum(perpca_matrix_build(usum, sf->d, sf->r1));
	values[1] = Float8GetDatum(weight);
	values[2] = Float8GetDatum(objective);
	values[3] = Float8GetDatum(change);
	PG_RETURN_DATUM(fed_row(fcinfo, values, nulls));
}

/* V_i <- GR(V_i - U U'V_i) with the polar retraction. */
static void
shard_deflate(ShardFit *sf, FitClient *c)
{
	int			d = sf->d,
				r1 = sf->r1,
				k = c->k;
	double	   *UtV = palloc(sizeof(double) * r1 * Max(c->r2, 1));

	if (c->r2 == 0)
		return;
	linalg_gemm(true, false, r1, c->r2, d, 1.0, c->W, k, c->W + r1, k, 0.0, UtV, c->r2);
	linalg_gemm(false, false, d, c->r2, r1, -1.0, c->W, k, UtV, c->r2, 1.0, c->W + r1, k);
	fed_retract(FIT_RETRACT_POLAR, d, c->r2, c->W + r1, k);
	pfree(UtV);
}

/* Rotate V_i to the eigenvectors of V_i'S_iV_i (the k x k block M[r1:, r1:]), fix signs, keep the variances. */
static void
shard_order_local(ShardFit *sf, FitClient *c, const double *M)
{
	int			d = sf->d,
				r1 = sf->r1,
				r2 = c->r2,
				k = c->k;
	double	   *B = palloc(sizeof(double) * r2 * r2);
	double	   *Q = palloc(sizeof(double) * r2 * r2);
	double	   *V = palloc(sizeof(double) * d * r2);

	linalg_copy(r2, r2, M + r1 * k + r1, k, B, r2);
	fed_eigh_top(r2, B, r2, c->variance + r1, Q, r2);
	linalg_copy(d, r2, c->W + r1, k, V, r2);
	linalg_gemm(false, false, d, r2, r2, 1.0, V, r2, Q, r2, 0.0, c->W + r1, k);
	linalg_fix_signs(d, r2, c->W + r1, k);
}

/*
 * Make one client feasible against U (deflate twice), then add its pieces:
 * gram += w U'S U, grad += w G_U (tangent gradient), *gv += w ||G_V||^2,
 * *objective += w 1/2 tr(W'SW); finally order its local components.
 */
static void
shard_finish_client(ShardFit *sf, FitClient *c, double *gram, double *grad, double *gv,
					double *objective)
{
	int			d = sf->d,
				r1 = sf->r1,
				k = c->k;
	double	   *M = palloc(sizeof(double) * k * k);
	double		trace = 0.0;

	linalg_copy(d, r1, sf->p->U, r1, c->W, k);
	shard_deflate(sf, c);
	shard_deflate(sf, c);
	fit_client_apply(sf->p, c, c->W, k, c->SW);
	linalg_gemm(true, false, k, k, d, 1.0, c->W, k, c->SW, k, 0.0, M, k);
	for (int j = 0; j < k; j++)
		trace += M[j * k + j];
	*objective += c->weight * 0.5 * trace;
	linalg_gemm(false, false, d, k, k, -1.0, c->W, k, M, k, 1.0, c->SW, k);
	for (int a = 0; a < r1; a++)
		for (int b = 0; b < r1; b++)
			gram[a * r1 + b] += c->weight * M[a * k + b];
	for (int row = 0; row < d; row++)
	{
		const double *g = c->SW + (int64) row * k;

		for (int j = 0; j < r1; j++)
			grad[row * r1 + j] += c->weight * g[j];
		for (int j = r1; j < k; j++)
			*gv += c->weight * g[j] * g[j];
	}
	if (c->r2 > 0)
		shard_order_local(sf, c, M);
}

/*
 * perpca_shard_finish(fit_id, u) RETURNS (gram, objective, gradient, gradient_v, weight)
 * Final feasibility against U and the pieces of the fit's diagnostics:
 * sum_i w_i U'S_iU (n_global x n_global), sum_i w_i f_i, sum_i w_i G_U,i
 * (d x n_global), sum_i w_i ||G_V,i||^2 and sum_i w_i.
 */
Datum
perpca_shard_finish(PG_FUNCTION_ARGS)
{
	ShardFit   *sf = shard_fit_ready(fcinfo);
	double	   *U = shard_u_arg(fcinfo, sf, 1);
	int			d = sf->d,
				r1 = sf->r1;
	double	   *gram = palloc0(sizeof(double) * r1 * r1);
	double	   *grad = palloc0(sizeof(double) * d * r1);
	double		gv = 0.0,
				objective = 0.0,
				weight = 0.0;
	Datum		values[5];
	bool		nulls[5] = {0};
	MemoryContext old;

	if (!sf->v_ready)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("federated fit \"%s\" has not run a round", sf->id)));
	old = MemoryContextSwitchTo(sf->cxt);
	memcpy(sf->p->U, U, sizeof(double) * d * r1);
	MemoryContextSwitchTo(old);
	for (int i = 0; i < sf->n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		shard_finish_client(sf, &sf->p->clients[i], gram, grad, &gv, &objective);
		weight += sf->p->clients[i].weight;
	}
	sf->finished = true;
	values[0] = PointerGetDatum(perpca_matrix_build(gram, r1, r1));
	values[1] = Float8GetDatum(objective);
	values[2] = PointerGetDatum(perpca_matrix_build(grad, d, r1));
	values[3] = Float8GetDatum(gv);
	values[4] = Float8GetDatum(weight);
	PG_RETURN_DATUM(fed_row(fcinfo, values, nulls));
}

/* perpca_shard_result(fit_id) RETURNS TABLE (client, kind, component, pc, variance): the local rows. */
Datum
perpca_shard_result(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ShardFit   *sf = shard_fit_ready(fcinfo);
	double	   *buf = palloc(sizeof(double) * sf->d);

	if (!sf->finished)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("federated fit \"%s\" is not finished", sf->id),
				 errhint("Call perpca_shard_finish first.")));
	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < sf->n; i++)
	{
		FitClient  *c = &sf->p->clients[i];

		for (int j = sf->r1; j < c->k; j++)
		{
			Datum		values[5];
			bool		nulls[5] = {0};

			linalg_copy(sf->d, 1, c->W + j, c->k, buf, 1);
			values[0] = CStringGetTextDatum(sf->names[i]);
			values[1] = CStringGetTextDatum("local");
			values[2] = Int32GetDatum(j - sf->r1 + 1);
			values[3] = PointerGetDatum(perpca_vector_build(buf, sf->d));
			values[4] = Float8GetDatum(c->variance[j]);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
	return (Datum) 0;
}

/* perpca_shard_close(fit_id) RETURNS boolean: free the fit's state; false if it was not open. */
Datum
perpca_shard_close(PG_FUNCTION_ARGS)
{
	char	   *id = fed_text_arg(fcinfo, 0, "fit_id");
	ShardFit   *sf = shard_fit_find(id);

	if (sf == NULL)
		PG_RETURN_BOOL(false);
	shard_fit_free(sf);
	PG_RETURN_BOOL(true);
}

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
	double		lambda_max;
	FitProblem *p;				/* one pseudo-client per shard, for fit_server_step */
	double	   *U0;
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

/* A non-NULL int4 argument >= min. */
static int
fed_int_arg(FunctionCallInfo fcinfo, int argno, const char *option, int min)
{
	int			v;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("option \"%s\" must not be NULL", option)));
	v = PG_GETARG_INT32(argno);
	if (v < min)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"%s\" must be at least %d, got %d", option, min, v)));
	return v;
}

/* The shards argument: a non-empty 1-D text[] without NULLs. */
static void
fed_shards_arg(FunctionCallInfo fcinfo, FedFit *f)
{
	ArrayType  *a;
	Datum	   *elems;
	bool	   *nulls;

	if (PG_ARGISNULL(FARG_SHARDS))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("option \"shards\" must not be NULL")));
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
	f->query = fed_text_arg(fcinfo, FARG_QUERY, "query");
	f->r1 = fed_int_arg(fcinfo, FARG_N_GLOBAL, "n_global", 1);
	f->n_local = fed_int_arg(fcinfo, FARG_N_LOCAL, "n_local", 0);
	f->rounds = fed_int_arg(fcinfo, FARG_ROUNDS, "rounds", 1);
	if (PG_ARGISNULL(FARG_TOLERANCE) || !isfinite(PG_GETARG_FLOAT8(FARG_TOLERANCE)) ||
		PG_GETARG_FLOAT8(FARG_TOLERANCE) < 0.0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"tolerance\" must be a finite number >= 0")));
	f->tolerance = PG_GETARG_FLOAT8(FARG_TOLERANCE);
	if (!PG_ARGISNULL(FARG_STEP))
	{
		f->step = PG_GETARG_FLOAT8(FARG_STEP);
		if (!isfinite(f->step) || f->step <= 0.0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("option \"step\" must be a finite number > 0"),
					 errhint("Pass NULL to derive the step from the spectrum.")));
	}
	f->update = fed_choice(fed_text_arg(fcinfo, FARG_UPDATE, "update"), "update",
						   fed_update_names, lengthof(fed_update_names));
	f->retraction = fed_choice(fed_text_arg(fcinfo, FARG_RETRACTION, "retraction"), "retraction",
							   fed_retraction_names, lengthof(fed_retraction_names));
	f->init = fed_choice(fed_text_arg(fcinfo, FARG_INIT, "init"), "init",
						 fed_init_names, lengthof(fed_init_names));
	f->center = fed_choice(fed_text_arg(fcinfo, FARG_CENTER, "center"), "center",
						   fed_center_names, lengthof(fed_center_names));
	f->weights = fed_choice(fed_text_arg(fcinfo, FARG_WEIGHTS, "weights"), "weights",
							fed_weights_names, lengthof(fed_weights_names));
	if (PG_ARGISNULL(FARG_VERBOSE))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("option \"verbose\" must not be NULL")));
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

/* Show the fit's phase in pg_stat_activity.query. */
static void
fed_report_phase(const char *fmt,...)
{
	char		buf[256];
	va_list		args;

	va_start(args, fmt);
	vsnprintf(buf, sizeof(buf), fmt, args);
	va_end(args);
	pgstat_report_activity(STATE_RUNNING, buf);
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
	const char *params[5] = {f->id, f->query, r1, nl, fed_weights_names[f->weights]};
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

/* Phase 2: build the S_i on every shard; U0 = top n_global left singular vectors of [B_1, B_2, ...]. */
static void
fed_init(FedFit *f, const char *centre)
{
	const char *params[5] = {f->id, centre, fed_init_names[f->init],
	fed_update_names[f->update], fed_retraction_names[f->retraction]};
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
		f->lambda_max = Max(f->lambda_max,
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
	f->U0 = palloc(sizeof(double) * f->d * f->r1);
	fed_left_singular(f->d, Q, stacked, f->r1, f->U0, f->r1, NULL);
	pfree(stacked);
}

/* One pseudo-client per shard: fit_server_step averages sum_s (1/W) usum_s. */
static void
fed_make_problem(FedFit *f)
{
	FitClient  *pseudo = palloc0(sizeof(FitClient) * f->nshards);

	f->p = fit_problem_create(f->d, f->r1, f->nshards, pseudo);
	memcpy(f->p->U, f->U0, sizeof(double) * f->d * f->r1);
	f->p->lambda_max = f->lambda_max;
	f->p->step = f->step > 0.0 ? f->step
		: FED_STEP_SCALE / (f->lambda_max > 0.0 ? f->lambda_max : 1.0);
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

/* Rounds 1, 2, 5, 10, 20, 50, 100, ... get a verbose NOTICE. */
static bool
fed_report_round(int t)
{
	while (t >= 10 && t % 10 == 0)
		t /= 10;
	return t == 1 || t == 2 || t == 5;
}

/* The adaptive step of fit.c: grow 10% while the objective rises, halve (and drop momentum) when it falls. */
static void
fed_adapt_step(FitProblem *p, double previous)
{
	double		lmax = p->lambda_max > 0.0 ? p->lambda_max : 1.0;

	if (p->objective < previous - 1e-14 * fabs(previous))
	{
		p->step = Max(p->step * 0.5, FED_STEP_MIN_SCALE / lmax);
		memset(p->Mom, 0, sizeof(double) * p->d * p->r1);
	}
	else
		p->step = Min(p->step * 1.1, FED_STEP_MAX_SCALE / lmax);
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
		fed_report_phase("perpca_fit_federated: round %d, %d shards", t, f->nshards);
		p->objective = fed_round(f, step, &change);
		fit_server_step(p, (FitRetraction) f->retraction, f->adaptive ? FED_MOMENTUM : 0.0);
		change = Max(change, fed_projector_distance(f->d, f->r1, p->Uprev, p->U));
		f->diag.rounds = t;
		if (f->verbose && (fed_report_round(t) || t == f->rounds))
			ereport(NOTICE,
					(errmsg("round %d: objective %.10g, change %.3e, step %.3e",
							t, p->objective, change, step)));
		if (f->tolerance > 0.0 && change < f->tolerance)
		{
			f->diag.converged = true;
			break;
		}
		if (f->adaptive)
			fed_adapt_step(p, previous);
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
	fed_eigh_top(r1, gram, r1, uvariance, Q, r1);
	memcpy(f->U0, f->p->U, sizeof(double) * d * r1);
	linalg_gemm(false, false, d, r1, r1, 1.0, f->U0, r1, Q, r1, 0.0, f->p->U, r1);
	linalg_fix_signs(d, r1, f->p->U, r1);
	return uvariance;
}

/* Append one result row (client NULL for a global component). */
static void
fed_put_row(ReturnSetInfo *rsinfo, const char *client, const char *kind, int component,
			ArrayType *pc, double variance)
{
	Datum		values[5];
	bool		nulls[5] = {client == NULL, false, false, false, false};

	values[0] = client ? CStringGetTextDatum(client) : (Datum) 0;
	values[1] = CStringGetTextDatum(kind);
	values[2] = Int32GetDatum(component);
	values[3] = PointerGetDatum(pc);
	values[4] = Float8GetDatum(variance);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* Phase 5: global rows, then each shard's local rows (shard order, then its query order). */
static void
fed_results(FedFit *f, ReturnSetInfo *rsinfo, const double *uvariance)
{
	const char *params[1] = {f->id};
	double	   *buf = palloc(sizeof(double) * f->d);

	for (int j = 0; j < f->r1; j++)
	{
		linalg_copy(f->d, 1, f->p->U + j, f->r1, buf, 1);
		fed_put_row(rsinfo, NULL, "global", j + 1, perpca_vector_build(buf, f->d), uvariance[j]);
	}
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
			fed_put_row(rsinfo, SHARD_VALUE(r, i, 0), "local", pg_strtoint32(SHARD_VALUE(r, i, 2)),
						perpca_vector_build(pc, f->d),
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
	fed_report_phase("perpca_fit_federated: connecting to %d shards", f->nshards);
	fed_connect_all(f->sc, f->nshards, f->conninfo);
	mark = fed_bytes(f);
	fed_report_phase("perpca_fit_federated: opening %d shards", f->nshards);
	mean_sum = fed_open(f, &rows);
	fed_init(f, fed_centre_text(f, mean_sum, rows));
	f->diag.setup_bytes = fed_bytes(f) - mark;
	mark = fed_bytes(f);
	fed_make_problem(f);
	fed_rounds(f);
	f->diag.round_bytes = f->diag.rounds > 0 ? (fed_bytes(f) - mark) / f->diag.rounds : 0;
	mark = fed_bytes(f);
	fed_report_phase("perpca_fit_federated: writing results");
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
		pgstat_report_activity(STATE_RUNNING, debug_query_string);
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
