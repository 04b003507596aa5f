/*
 * federated.c -- perpca_fit_federated(): the fit engine with the clients on
 * shards
 *
 * The coordinator is a FitBackend whose operations run the same node
 * functions on every shard over libpq (shard_conn.c), in parallel (each
 * command goes to every shard before any answer is read), and add up the
 * shards' FitSums.  fit_run() then runs exactly the loop it runs on one
 * node: same starts, same solvers, same stopping rules and diagnostics.
 * The shard side is federated_shard.c (functions in schema perpca_internal).
 * Only U (d x n_global) goes out and d x n_global sums come back per round.
 * With scale 'standard' the setup has one more round trip: each shard's d
 * sums about the pooled mean (shard_scale), the divisors back with shard_init.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "exact_sum.h"
#include "fit.h"
#include "fit_input.h"
#include "fit_options.h"
#include "fit_sql.h"
#include "fit_sums.h"
#include "linalg.h"
#include "error_kinds.h"
#include "perpca.h"
#include "row_reader.h"
#include "scale.h"
#include "shard_conn.h"

PG_FUNCTION_INFO_V1(perpca_fit_federated);
PG_FUNCTION_INFO_V1(perpca_last_federated_fit);

/* Arguments of perpca_fit_federated that are not options (those are read by name). */
#define FARG_SHARDS 0
#define FARG_QUERY 1

/* Everything the coordinator keeps during one fit. */
typedef struct FedFit
{
	FitOptions *opts;
	char	   *query;
	int			nshards;
	char	  **conninfo;
	ShardConn  *sc;
	bool	   *active;			/* shard has clients */
	char		id[64];
	int			d;
	int			nclients;
	ExactSum   *mean_sum;		/* sum_i n_i mean_i over the shards, from shard_open */
	FitBackend	be;
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
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NULL),
				 errmsg("argument \"shards\" must not be NULL")));
	a = PG_GETARG_ARRAYTYPE_P(FARG_SHARDS);
	if (ARR_NDIM(a) > 1)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARRAY_SHAPE),
				 errmsg("shards must be a one-dimensional array of connection strings")));
	deconstruct_array(a, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &f->nshards);
	if (f->nshards == 0)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("shards must hold at least one connection string")));
	f->conninfo = palloc(sizeof(char *) * f->nshards);
	for (int s = 0; s < f->nshards; s++)
	{
		if (nulls[s])
			ereport(ERROR,
					(errcode(PERPCA_ERRCODE_NULL),
					 errmsg("connection string of shard %d is NULL", s + 1)));
		f->conninfo[s] = TextDatumGetCString(elems[s]);
	}
}

/* ------------------------------------------------------------------------
 * Commands to every shard
 * ------------------------------------------------------------------------
 */

/* Send perpca_internal.function(params) to every shard that has clients. */
static void
fed_send_active(FedFit *f, const char *function, int nparams, const char *const *params)
{
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT * FROM perpca_internal.%s(", function);
	for (int i = 1; i <= nparams; i++)
		appendStringInfo(&sql, i == 1 ? "$%d" : ", $%d", i);
	appendStringInfoChar(&sql, ')');
	for (int s = 0; s < f->nshards; s++)
		if (f->active[s])
			fed_send(&f->sc[s], sql.data, nparams, params);
}

/* The answer of shard s, which must be one row of ncols columns. */
static ShardRows *
fed_get_row(FedFit *f, int s, int ncols)
{
	ShardRows  *r = fed_get(&f->sc[s]);

	if (r->nrows != 1 || r->ncols != ncols)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_SHARD_PROTOCOL),
				 errmsg("shard %d returned %d row(s) of %d column(s), expected one of %d",
						f->sc[s].index, r->nrows, r->ncols, ncols)));
	return r;
}

/*
 * A shard's exact expansion of rows x cols entries: (layers x rows) x cols
 * (exact_sum.h); the terms, *layers set.
 */
static double *
fed_expansion_parse(const ShardConn *sc, const char *text, int rows, int cols, int *layers,
					const char *what)
{
	int			m = -1,
				n = cols;
	double	   *terms = fed_matrix_parse(sc, text, &m, &n, what);

	if (rows <= 0 || m % rows != 0 || m / rows > EXACT_MAX_LAYERS)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_SHARD_PROTOCOL),
				 errmsg("shard %d returned a %s of %d rows, not layers of %d", sc->index, what, m,
						rows)));
	*layers = m / rows;
	return terms;
}

/* Add shard s's expansion of part (rows x cols) from column col of its row r into out. */
static void
fed_add_part(FedFit *f, int s, ShardRows *r, int col, FitSumPart part, int rows, int cols,
			 FitSums *out)
{
	int			layers;
	double	   *terms;

	if (SHARD_VALUE(r, 0, col) == NULL || rows * cols == 0)
		return;
	terms = fed_expansion_parse(&f->sc[s], SHARD_VALUE(r, 0, col), rows, cols, &layers, "sum");
	fit_sums_add_expansion(out, part, terms, layers);
}

/* Add a shard's sums row (sums, u, g, change, gram, exact) into out's exact sums. */
static void
fed_add_sums(FedFit *f, int s, FitSums *out)
{
	ShardRows  *r = fed_get_row(f, s, 6);
	int			d = f->d,
				r1 = f->be.r1;

	if (SHARD_VALUE(r, 0, 0) == NULL)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_SHARD_PROTOCOL),
				 errmsg("shard %d returned no sums", f->sc[s].index)));
	fed_add_part(f, s, r, 0, FIT_SUM_SCALARS, 1, 3, out);
	fed_add_part(f, s, r, 1, FIT_SUM_U, d, r1, out);
	fed_add_part(f, s, r, 2, FIT_SUM_G, d, r1, out);
	out->change = Max(out->change, fed_float_parse(&f->sc[s], SHARD_VALUE(r, 0, 3), "change"));
	fed_add_part(f, s, r, 4, FIT_SUM_GRAM, r1, r1, out);
	out->exact += (int) fed_float_parse(&f->sc[s], SHARD_VALUE(r, 0, 5), "exact");
}

/* Send a sums-returning command to every active shard and add their answers. */
static void
fed_sums(FedFit *f, const char *function, int nparams, const char *const *params, FitSums *out)
{
	fed_send_active(f, function, nparams, params);
	for (int s = 0; s < f->nshards; s++)
		if (f->active[s])
			fed_add_sums(f, s, out);
	fit_sums_round(out);
}

/* ------------------------------------------------------------------------
 * The backend: node operations on the shards
 * ------------------------------------------------------------------------
 */

/* One client's block of stacked local PCs: columns col .. col + k - 1 of a shard's basis. */
typedef struct FedBlock
{
	const char *key;
	const double *B;
	int			ld;
	int			col;
	int			k;
} FedBlock;

static int
fed_block_cmp(const void *a, const void *b)
{
	return strcmp(((const FedBlock *) a)->key, ((const FedBlock *) b)->key);
}

/* A shard's 1-D array value (text) of element type elem, as *n Datums; what names it. */
static Datum *
fed_array_parse(const ShardConn *sc, const char *text, Oid elem, int *n, const char *what)
{
	int16		len;
	bool		byval;
	char		align;
	Datum	   *elems;
	bool	   *nulls;

	if (text == NULL)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_SHARD_PROTOCOL),
				 errmsg("shard %d returned no %s", sc->index, what)));
	get_typlenbyvalalign(elem, &len, &byval, &align);
	deconstruct_array(DatumGetArrayTypeP(OidInputFunctionCall(F_ARRAY_IN, (char *) text, elem, -1)),
					  elem, len, byval, align, &elems, &nulls, n);
	return elems;
}

/* The keys of a shard's clients (text[] value). */
static char **
fed_keys_parse(const ShardConn *sc, const char *value, int *n)
{
	Datum	   *elems = fed_array_parse(sc, value, TEXTOID, n, "client keys");
	char	  **keys = palloc(sizeof(char *) * Max(*n, 1));

	for (int i = 0; i < *n; i++)
		keys[i] = TextDatumGetCString(elems[i]);
	return keys;
}

/* Shard s's blocks (basis, keys, columns) appended to blocks at *nblocks; returns its columns. */
static int
fed_basis_blocks(FedFit *f, int s, FedBlock *blocks, int *nblocks)
{
	ShardRows  *r = fed_get_row(f, s, 3);
	int			m = f->d,
				q = -1,
				nkeys,
				ncols,
				col = 0;
	double	   *B = fed_matrix_parse(&f->sc[s], SHARD_VALUE(r, 0, 0), &m, &q, "start basis");
	char	  **keys = fed_keys_parse(&f->sc[s], SHARD_VALUE(r, 0, 1), &nkeys);
	Datum	   *widths = fed_array_parse(&f->sc[s], SHARD_VALUE(r, 0, 2), INT4OID, &ncols,
											 "block widths");

	if (*nblocks + nkeys > f->nclients)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_SHARD_PROTOCOL),
				 errmsg("shard %d returned %d start blocks, more than its clients", f->sc[s].index,
						nkeys)));
	for (int j = 0; j < nkeys && j < ncols; j++)
	{
		FedBlock   *b = &blocks[(*nblocks)++];

		b->key = keys[j];
		b->B = B;
		b->ld = q;
		b->col = col;
		b->k = DatumGetInt32(widths[j]);
		col += b->k;
	}
	if (ncols != nkeys || col != q)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_SHARD_PROTOCOL),
				 errmsg("shard %d returned %d block widths for %d keys and %d columns",
						f->sc[s].index, ncols, nkeys, q)));
	return q;
}

/*
 * The stacked local PCs of all clients, in the byte order of their keys:
 * the same matrix as one node's (node_basis), however the clients are
 * spread over the shards.
 */
static double *
fed_basis(FitBackend *be, bool qu, bool exact, int *q)
{
	FedFit	   *f = be->state;
	const char *params[3] = {f->id, qu ? "true" : "false", exact ? "true" : "false"};
	FedBlock   *blocks = palloc(sizeof(FedBlock) * Max(f->nclients, 1));
	int			nblocks = 0,
				Q = 0,
				off = 0;
	double	   *stacked;

	fed_send_active(f, "shard_basis", 3, params);
	for (int s = 0; s < f->nshards; s++)
		if (f->active[s])
		{
			Q += fed_basis_blocks(f, s, blocks, &nblocks);
		}
	qsort(blocks, nblocks, sizeof(FedBlock), fed_block_cmp);
	stacked = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * f->d * Max(Q, 1));
	for (int j = 0; j < nblocks; j++)
	{
		linalg_copy(f->d, blocks[j].k, blocks[j].B + blocks[j].col, blocks[j].ld, stacked + off, Q);
		off += blocks[j].k;
	}
	*q = Q;
	return stacked;
}

/* Send function(params) to the active shards and add their exact expansions of rows x cols into out. */
static void
fed_sum_expansions(FedFit *f, const char *function, int nparams, const char *const *params,
				   int rows, int cols, const char *what, double *out)
{
	ExactSum   *acc = exact_sum_create((int64) rows * cols);

	fed_send_active(f, function, nparams, params);
	for (int s = 0; s < f->nshards; s++)
		if (f->active[s])
		{
			ShardRows  *r = fed_get_row(f, s, 1);
			int			layers;
			double	   *terms = fed_expansion_parse(&f->sc[s], SHARD_VALUE(r, 0, 0), rows, cols,
													&layers, what);

			exact_sum_add_expansion(acc, 0, acc->n, terms, layers);
		}
	exact_sum_values(acc, 0, acc->n, out);
	exact_sum_free(acc);
}

static void
fed_apply(FitBackend *be, const double *X, int q, double *out)
{
	FedFit	   *f = be->state;
	const char *params[2] = {f->id, fed_matrix_text(X, f->d, q)};

	fed_sum_expansions(f, "shard_apply", 2, params, f->d, q, "product", out);
}

static void
fed_start_local(FitBackend *be, const double *U, FitInit how)
{
	FedFit	   *f = be->state;
	const char *params[3] = {f->id, fed_matrix_text(U, f->d, be->r1), fit_init_names[how]};

	fed_send_active(f, "shard_start_local", 3, params);
	for (int s = 0; s < f->nshards; s++)
		if (f->active[s])
			(void) fed_get_row(f, s, 1);
}

static void
fed_round(FitBackend *be, const double *U, double step, FitUpdate update,
		  FitRetraction retraction, bool want_kkt, FitSums *out)
{
	FedFit	   *f = be->state;
	char		stepbuf[32];
	const char *params[6] = {f->id, fed_matrix_text(U, f->d, be->r1), stepbuf,
	fit_update_names[update], fit_retraction_names[retraction], want_kkt ? "true" : "false"};

	snprintf(stepbuf, sizeof(stepbuf), "%.17g", step);
	fed_sums(f, "shard_round", 6, params, out);
}

static void
fed_evaluate(FitBackend *be, const double *U, double tol, FitSums *out)
{
	FedFit	   *f = be->state;
	char		tolbuf[32];
	const char *params[3] = {f->id, fed_matrix_text(U, f->d, be->r1), tolbuf};

	snprintf(tolbuf, sizeof(tolbuf), "%.17g", tol);
	fed_sums(f, "shard_evaluate", 3, params, out);
}

static void
fed_finish(FitBackend *be, const double *U, bool best_response, FitSums *out)
{
	FedFit	   *f = be->state;
	const char *params[3] = {f->id, fed_matrix_text(U, f->d, be->r1),
	best_response ? "true" : "false"};

	fed_sums(f, "shard_finish", 3, params, out);
}

/* ------------------------------------------------------------------------
 * Setup: open the fit on every shard, one set of clients, the center
 * ------------------------------------------------------------------------
 */

/* Refuse a client key that two shards both return, naming it and both shards. */
static void
fed_check_keys(FedFit *f, char ***keys, int *nkeys)
{
	for (int s = 0; s < f->nshards; s++)
		for (int t = s + 1; t < f->nshards; t++)
			for (int i = 0; i < nkeys[s]; i++)
				for (int j = 0; j < nkeys[t]; j++)
					if (strcmp(keys[s][i], keys[t][j]) == 0)
						ereport(ERROR,
								(errcode(PERPCA_ERRCODE_DUPLICATE_CLIENT),
								 errmsg("client \"%s\" is on shard %d and on shard %d", keys[s][i],
										s + 1, t + 1),
								 errdetail("Statistics never leave the shards, so one client's rows must all be on one shard."),
								 errhint("Partition the data by the client key, or fit with perpca_fit on merged statistics.")));
}

/*
 * Shard s's answer to shard_open: its clients, dimension, rows, skipped
 * rows, the sum of its clients' means (an exact expansion) and its keys.
 * A shard without clients is left out of the rounds.
 */
static void
fed_open_reply(FedFit *f, int s, double *rows, FitDiagnostics *diag, char ***keys, int *nkeys)
{
	ShardRows  *r = fed_get_row(f, s, 7);
	int			n = pg_strtoint32(SHARD_VALUE(r, 0, 0)),
				d = pg_strtoint32(SHARD_VALUE(r, 0, 1));
	int64		skipped = pg_strtoint64(SHARD_VALUE(r, 0, 6));
	int			layers;
	double	   *means;

	diag->rows_skipped += skipped;
	f->active[s] = n > 0;
	if (n == 0)
		return;
	if (f->nclients > 0 && d != f->d)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_DIMENSION),
				 errmsg("clients of shard %d have dimension %d, expected %d", s + 1, d, f->d),
				 errdetail("All clients must have the same dimension.")));
	f->d = d;
	f->nclients += n;
	*rows += (double) pg_strtoint64(SHARD_VALUE(r, 0, 2));
	diag->stats_binary_bytes += pg_strtoint64(SHARD_VALUE(r, 0, 4));
	means = fed_expansion_parse(&f->sc[s], SHARD_VALUE(r, 0, 3), 1, d, &layers, "mean sum");
	if (f->mean_sum == NULL)
		f->mean_sum = exact_sum_create(d);
	/* added exactly: the same whatever order the shards are listed in */
	exact_sum_add_expansion(f->mean_sum, 0, d, means, layers);
	*keys = fed_keys_parse(&f->sc[s], SHARD_VALUE(r, 0, 5), nkeys);
}

/* Send shard_open (the query, the ranks, weights, seed and missing) to every shard, all active. */
static void
fed_send_open(FedFit *f)
{
	char		r1[16],
				nl[16],
				seed[32];
	const char *params[7] = {f->id, f->query, r1, nl,
		fit_weights_names[f->opts->weights ? 1 : 0], seed,
	perpca_missing_names[f->opts->missing]};

	snprintf(r1, sizeof(r1), "%d", f->opts->n_global);
	snprintf(nl, sizeof(nl), "%d", f->opts->n_local);
	snprintf(seed, sizeof(seed), "%lld", (long long) (int64) f->opts->seed);
	for (int s = 0; s < f->nshards; s++)
		f->active[s] = true;
	fed_send_active(f, "shard_open", 7, params);
}

/* Phase 1: open on every shard; the sum of n_i mean_i and the row count. */
static double *
fed_open(FedFit *f, double *rows, FitDiagnostics *diag)
{
	char	 ***keys = palloc0(sizeof(char **) * f->nshards);
	int		   *nkeys = palloc0(sizeof(int) * f->nshards);
	double	   *mean_sum;

	fed_send_open(f);
	*rows = 0;
	for (int s = 0; s < f->nshards; s++)
		fed_open_reply(f, s, rows, diag, &keys[s], &nkeys[s]);
	if (f->nclients == 0)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_BAD_VALUE),
				 errmsg("query returned no clients on any shard"),
				 errhint("perpca_fit_federated needs at least one (client, perpca_stats) row.")));
	/* (each shard names its groups without rows in its own NOTICE) */
	row_report("perpca_fit_federated", &(RowReport) {.skipped = diag->rows_skipped, .groups = -1});
	fed_check_keys(f, keys, nkeys);
	mean_sum = palloc0(sizeof(double) * f->d);
	exact_sum_values(f->mean_sum, 0, f->d, mean_sum);
	return mean_sum;
}

/*
 * Phase 1b, scale 'standard': the pooled standard deviations from each
 * shard's sums about the pooled mean (scale.h); mean_sum becomes that of the
 * scaled rows.  Returns the divisors, and the constant features in *constant_out.
 */
static double *
fed_scale(FedFit *f, double *mean_sum, double rows, bool **constant_out)
{
	int			d = f->d;
	double	   *mean = palloc(sizeof(double) * d);
	double	   *sums = palloc0(sizeof(double) * d);
	double	   *scale = palloc(sizeof(double) * d);
	bool	   *constant = palloc(sizeof(bool) * d);
	const char *params[2];

	for (int j = 0; j < d; j++)
		mean[j] = mean_sum[j] / rows;
	params[0] = f->id;
	params[1] = fed_matrix_text(mean, 1, d);
	/* added exactly: the same whatever order the shards are listed in */
	fed_sum_expansions(f, "shard_scale", 2, params, 1, d, "scale sums", sums);
	if (scale_finish(sums, mean, rows, d, scale, constant) > 0)
		scale_report_constant(constant, d);
	for (int j = 0; j < d; j++)
		mean_sum[j] /= scale[j];
	*constant_out = constant;
	return scale;
}

/* Phase 2: the clients' S_i on every shard (scaled first); the backend's weight and lambda_max. */
static void
fed_init(FedFit *f, const double *center, const double *scale)
{
	const char *params[3] = {f->id, center ? fed_matrix_text(center, 1, f->d) : NULL,
	scale ? fed_matrix_text(scale, 1, f->d) : NULL};

	fed_send_active(f, "shard_init", 3, params);
	f->be.weight = 0.0;
	f->be.lambda_max = 0.0;
	for (int s = 0; s < f->nshards; s++)
		if (f->active[s])
		{
			ShardRows  *r = fed_get_row(f, s, 2);

			f->be.weight += fed_float_parse(&f->sc[s], SHARD_VALUE(r, 0, 0), "weight");
			f->be.lambda_max = Max(f->be.lambda_max,
								   fed_float_parse(&f->sc[s], SHARD_VALUE(r, 0, 1), "lambda_max"));
		}
}

/* The backend over the shards of f. */
static void
fed_backend(FedFit *f)
{
	f->be.state = f;
	f->be.d = f->d;
	f->be.r1 = f->opts->n_global;
	f->be.nclients = f->nclients;
	f->be.basis = fed_basis;
	f->be.apply = fed_apply;
	f->be.start_local = fed_start_local;
	f->be.round = fed_round;
	f->be.evaluate = fed_evaluate;
	f->be.finish = fed_finish;
}

/* ------------------------------------------------------------------------
 * Results
 * ------------------------------------------------------------------------
 */

/* A shard's 1-D float8[] value (text) of length d, checked. */
static double *
fed_vector_parse(const ShardConn *sc, const char *text, int d)
{
	int			len;
	double	   *x;

	if (text == NULL)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_SHARD_PROTOCOL),
				 errmsg("shard %d returned a NULL component", sc->index)));
	x = perpca_vector_arg(DatumGetArrayTypeP(OidInputFunctionCall(F_ARRAY_IN, (char *) text,
																  FLOAT8OID, -1)),
						  &len, "component");
	if (len != d)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_SHARD_PROTOCOL),
				 errmsg("shard %d returned a component of length %d, expected %d", sc->index, len, d)));
	return x;
}

/*
 * Shard s's local components into the result set, each one's weighted
 * projector added to A (for theta_est); false when it has none.
 */
static bool
fed_result_rows(FedFit *f, int s, ReturnSetInfo *rsinfo, double *A)
{
	ShardRows  *r = fed_get(&f->sc[s]);
	int			d = f->d;

	if (r->ncols != 6)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_SHARD_PROTOCOL),
				 errmsg("shard %d returned %d result columns, expected 6", s + 1, r->ncols)));
	for (int i = 0; i < r->nrows; i++)
	{
		double	   *pc;

		CHECK_FOR_INTERRUPTS();
		if (SHARD_VALUE(r, i, 0) == NULL || SHARD_VALUE(r, i, 2) == NULL)
			ereport(ERROR,
					(errcode(PERPCA_ERRCODE_SHARD_PROTOCOL),
					 errmsg("shard %d returned a local component without client or number", s + 1)));
		pc = fed_vector_parse(&f->sc[s], SHARD_VALUE(r, i, 3), d);
		clients_put_component(rsinfo, SHARD_VALUE(r, i, 0), "local",
							  pg_strtoint32(SHARD_VALUE(r, i, 2)), pc, d, 1, 0,
							  fed_float_parse(&f->sc[s], SHARD_VALUE(r, i, 4), "variance"), 0.0);
		linalg_gemm(false, true, d, d, 1, fed_float_parse(&f->sc[s], SHARD_VALUE(r, i, 5), "weight"),
					pc, 1, pc, 1, 1.0, A, d);
	}
	return r->nrows > 0;
}

/* Global rows, then each shard's local rows (shard order, then its query order); theta_est. */
static void
fed_results(FedFit *f, ReturnSetInfo *rsinfo, const FitResult *res, FitDiagnostics *diag)
{
	const char *params[1] = {f->id};
	int			d = f->d;
	double	   *A = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * d * d);
	bool		any = false;

	memset(A, 0, sizeof(double) * d * d);
	clients_put_global(rsinfo, res, d);
	fed_send_active(f, "shard_result", 1, params);
	for (int s = 0; s < f->nshards; s++)
		if (f->active[s])
			any |= fed_result_rows(f, s, rsinfo, A);
	diag->theta_est = fit_theta(A, d, f->be.weight, any);
}

/* ------------------------------------------------------------------------
 * perpca_fit_federated
 * ------------------------------------------------------------------------
 */

/* The whole federated fit, phase by phase, counting the bytes of each. */
static void
fed_run(FedFit *f, ReturnSetInfo *rsinfo, FitDiagnostics *diag)
{
	static uint32 counter = 0;
	int64		mark;
	double		rows;
	double	   *mean_sum;
	double	   *scale;
	FitResult	res = {0};

	snprintf(f->id, sizeof(f->id), "perpca_%d_%lld_%u", MyProcPid,
			 (long long) GetCurrentTimestamp(), ++counter);
	perpca_report_phase("perpca_fit_federated: connecting to %d shards", f->nshards);
	fed_connect_all(f->sc, f->nshards, f->conninfo);
	perpca_report_phase("perpca_fit_federated: opening %d shards", f->nshards);
	mean_sum = fed_open(f, &rows, diag);
	scale = f->opts->scale == FIT_SCALE_STANDARD ? fed_scale(f, mean_sum, rows, &diag->constant) : NULL;
	diag->scale_factors = scale;
	fed_backend(f);
	fed_init(f, clients_center(f->opts->center, mean_sum, rows, f->d), scale);
	diag->setup_bytes = fed_bytes(f);
	mark = fed_bytes(f);
	perpca_report_phase("perpca_fit_federated: fitting %d clients on %d shards", f->nclients,
						f->nshards);
	fit_run(&f->be, f->opts, &res, diag);
	diag->round_bytes = diag->rounds > 0 ? (fed_bytes(f) - mark) / (diag->rounds + f->be.setup_rounds) : 0;
	mark = fed_bytes(f);
	perpca_report_phase("perpca_fit_federated: writing results");
	fed_results(f, rsinfo, &res, diag);
	diag->result_bytes = fed_bytes(f) - mark;
	for (int s = 0; s < f->nshards; s++)
		diag->n_shards += f->active[s] ? 1 : 0;
	diag->round_binary_bytes = (int64) diag->n_shards * (3 * 8 * (int64) f->d * f->be.r1 + 5 * 8);
}

/* Read the arguments: shards, query, the options (no method, no start). */
static void
fed_parse(FunctionCallInfo fcinfo, FedFit *f, FitOptions *opts)
{
	fed_shards_arg(fcinfo, f);
	f->query = fit_text_arg(fcinfo, FARG_QUERY, "query");
	fit_options_parse_call(fcinfo, opts);
	if (opts->init == FIT_INIT_GIVEN)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_UNSUPPORTED),
				 errmsg("init 'given' is not available in perpca_fit_federated"),
				 errhint("Use init 'best', 'dispca', 'qu', 'pooled' or 'random'.")));
	f->opts = opts;
	f->sc = palloc0(sizeof(ShardConn) * f->nshards);
	f->active = palloc0(sizeof(bool) * f->nshards);
	for (int s = 0; s < f->nshards; s++)
		f->sc[s].index = s + 1;
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
	FitDiagnostics *diag;
	instr_time	start,
				elapsed;

	INSTR_TIME_SET_CURRENT(start);
	InitMaterializedSRF(fcinfo, 0);
	fitcxt = AllocSetContextCreate(CurrentMemoryContext, "perpca_fit_federated",
								   ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(fitcxt);
	f = palloc0(sizeof(FedFit));
	diag = palloc0(sizeof(FitDiagnostics));
	PG_TRY();
	{
		fed_parse(fcinfo, f, &diag->opts);
		fed_run(f, rsinfo, diag);
	}
	PG_FINALLY();
	{
		/* no shard connection outlives the call, whatever happened */
		if (f->sc != NULL)
			fed_disconnect_all(f->sc, f->nshards);
		perpca_restore_activity();
	}
	PG_END_TRY();
	INSTR_TIME_SET_CURRENT(elapsed);
	INSTR_TIME_SUBTRACT(elapsed, start);
	diag->seconds = INSTR_TIME_GET_DOUBLE(elapsed);
	fit_sql_remember(diag, true);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(fitcxt);
	return (Datum) 0;
}

/* perpca_last_federated_fit(): diagnostics and bytes of the last perpca_fit_federated in this session. */
Datum
perpca_last_federated_fit(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const FitDiagnostics *l = fit_sql_last(true);
	Datum		values[18];
	bool		nulls[18] = {0};

	InitMaterializedSRF(fcinfo, 0);
	if (l == NULL)
		return (Datum) 0;
	values[17] = Int64GetDatum(l->rows_skipped);
	values[0] = Int32GetDatum(l->rounds);
	values[1] = BoolGetDatum(l->converged);
	values[2] = fit_sql_float(l->objective, &nulls[2]);
	values[3] = fit_sql_float(l->kkt_residual, &nulls[3]);
	values[4] = fit_sql_float(l->step, &nulls[4]);
	values[5] = Int32GetDatum(l->n_shards);
	values[6] = Int32GetDatum(l->n_clients);
	values[7] = Int32GetDatum(l->dim);
	values[8] = Int64GetDatum(l->setup_bytes);
	values[9] = Int64GetDatum(l->round_bytes);
	values[10] = Int64GetDatum(l->result_bytes);
	values[11] = Int64GetDatum(l->round_binary_bytes);
	values[12] = Int64GetDatum(l->stats_binary_bytes);
	values[13] = Float8GetDatum(l->seconds);
	values[14] = CStringGetTextDatum(fit_solvers[l->opts.solver].name);
	values[15] = fit_sql_float(l->theta_est, &nulls[15]);
	values[16] = fit_sql_float(l->gradient_norm, &nulls[16]);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}
