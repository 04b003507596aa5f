/*
 * ranks.c -- perpca_choose_ranks(): a scan over pairs (n_global, n_local)
 *
 * The training and held-out rows are read once, as statistics per client
 * (row_reader.h), and every pair of the grid is fitted on the training
 * statistics (fit.c, on one node) and evaluated on the held-out statistics
 * from second moments (evaluate.c), in this backend's memory: no model is
 * stored and no table is created, so a scan also runs on a hot standby.
 *
 * A pair that uses every dimension (n_global + n_local >= d) explains any
 * row exactly, so its held-out error is 0 and measures nothing: such pairs
 * are left out (a row that says so).  The rule that recommends one of the
 * others, and the note that says why each pair was or was not recommended,
 * are in ranks_rule.c.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "parser/parse_coerce.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "calibrate_split.h"
#include "error_kinds.h"
#include "evaluate.h"
#include "fit.h"
#include "fit_input.h"
#include "fit_options.h"
#include "fit_sums.h"
#include "linalg.h"
#include "perpca.h"
#include "ranks_rule.h"
#include "stats.h"

PG_FUNCTION_INFO_V1(perpca_choose_ranks);

/* Arguments of perpca_choose_ranks, in SQL order. */
enum
{
	A_QUERY, A_HELDOUT, A_GLOBAL_RANKS, A_LOCAL_RANKS, A_WITHIN, A_MIN_THETA, A_HOLDOUT,
	A_ROUNDS, A_TOLERANCE, A_STEP, A_UPDATE, A_RETRACTION, A_INIT, A_SEED, A_CENTER,
	A_WEIGHTS, A_ADAPTIVE, A_SOLVER, A_SCALE, A_TARGET
};

#define NCOLS 15

/* The most times one call widens the grid while the recommendation sits on its edge. */
#define MAX_WIDENINGS 12

/* The largest rank of the default grid (default_grid), before any widening. */
#define DEFAULT_TOP_RANK 3

/* ------------------------------------------------------------------------
 * The queries
 * ------------------------------------------------------------------------
 */

/*
 * The hash of the row key q.key that splits the rows, in SQL that resolves
 * no cast or function of the key's type by name (the role that owns the
 * type could plant a cast to text, which would run as the caller): the
 * type's own extended hash function, from its default hash operator class
 * (which only a superuser creates), through hash_record_extended; for a type
 * without one (json, point), the text of its output function (which only a
 * superuser defines) through record_out.  Either is the same at every call,
 * the first under any setting.
 */
static const char *
key_hash_sql(Oid key_type)
{
	bool		as_text;
	char	   *key = split_key_sql(key_type, "q.key", &as_text);

	return as_text ? psprintf("pg_catalog.hashtextextended(%s, 0)", key)
		: psprintf("pg_catalog.hash_record_extended(ROW(%s), 0)", key);
}

/*
 * The training or held-out part of the rows of all (client, x, key), x an
 * array or a vector, as a source of its own: a repeatable split on a hash
 * of key.  Feature columns (client, c1, c2, ..., key) would leave the key's
 * column in doubt, so they are refused with what to pass instead.
 */
static void
split_source(const RowSource *all, int cut, bool heldout, RowSource *part)
{
	const Oid  *types = all->types;

	if (all->natts >= 2 && TypeCategory(getBaseType(types[1])) == TYPCATEGORY_NUMERIC)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_WRONG_TYPE),
				 errmsg("without a held-out query, the query must return rows (client, x, key) with x an array of the features"),
				 errdetail("Its second column is of type %s: a query of feature columns has no column known to be the row key.",
						   format_type_be(types[1])),
				 errhint("Pass the features as one array and the key after it (SELECT client, ARRAY[c1, c2, c3] AS x, id FROM ...), or pass heldout => a second query.")));
	if (all->natts < 3 || types[1] == stats_type_oid())
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_WRONG_TYPE),
				 errmsg("without a held-out query, the query must return rows (client, x float8[], key)"),
				 errhint("Add a row key as third column (the split hashes it), or pass heldout => a second query.")));
	*part = *all;
	part->natts = 2;
	part->body = psprintf("SELECT q.client, q.x FROM (%s\n) AS q(client, x, key) WHERE "
						  "pg_catalog.abs(%s OPERATOR(pg_catalog.%%) 10000) OPERATOR(pg_catalog.%s) %d",
						  all->body, key_hash_sql(types[2]), heldout ? "<" : ">=", cut);
	row_source_classify(part);
}

/* ------------------------------------------------------------------------
 * The grid
 * ------------------------------------------------------------------------
 */

static int
int_cmp(const void *a, const void *b)
{
	int			x = *(const int *) a,
				y = *(const int *) b;

	return (x > y) - (x < y);
}

/* The distinct non-negative ranks of an int[] argument, ascending. */
static int *
ranks_arg(FunctionCallInfo fcinfo, int argno, const char *what, int *n)
{
	ArrayType  *a;
	Datum	   *values;
	bool	   *nulls;
	int			count;
	int		   *out;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NULL),
				 errmsg("argument \"%s\" must not be NULL", what)));
	a = PG_GETARG_ARRAYTYPE_P(argno);
	deconstruct_array(a, INT4OID, sizeof(int32), true, TYPALIGN_INT, &values, &nulls, &count);
	out = palloc(sizeof(int) * (count + MAX_WIDENINGS));	/* room to widen */
	*n = 0;
	for (int i = 0; i < count; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(PERPCA_ERRCODE_NULL),
					 errmsg("%s must not contain NULL", what)));
		if (DatumGetInt32(values[i]) >= 0)
			out[(*n)++] = DatumGetInt32(values[i]);
	}
	qsort(out, *n, sizeof(int), int_cmp);
	count = 0;
	for (int i = 0; i < *n; i++)
		if (count == 0 || out[i] != out[count - 1])
			out[count++] = out[i];
	*n = count;
	return out;
}

/*
 * Append pair (g, l) to pairs (unless g + l < 1), marked left out when
 * g + l >= d; added is the widening that adds it (0: the starting grid).
 */
static void
add_pair(RankPair *pairs, int *npairs, int g, int l, int d, int added)
{
	RankPair   *p = &pairs[*npairs];

	if (g + l < 1)
		return;
	memset(p, 0, sizeof(RankPair));
	p->g = g;
	p->l = l;
	p->added = added;
	p->left_out = (int64) g + l >= d;
	if (p->left_out)
		p->note = psprintf("left out: n_global + n_local = %d uses every dimension (d = %d), "
						   "so held-out rows would be explained exactly", g + l, d);
	(*npairs)++;
}

/* The pairs of the grid with 1 <= g + l (room for cap), those with g + l >= d marked left out. */
static RankPair *
grid(const int *gs, int ng, const int *ls, int nl, int d, int cap, int *npairs)
{
	RankPair   *pairs = palloc0(sizeof(RankPair) * Max(cap, 1));

	*npairs = 0;
	for (int a = 0; a < ng; a++)
		for (int b = 0; b < nl; b++)
			add_pair(pairs, npairs, gs[a], ls[b], d, 0);
	return pairs;
}

/* How many pairs are not left out. */
static int
count_fitted(const RankPair *pairs, int npairs)
{
	int			n = 0;

	for (int i = 0; i < npairs; i++)
		n += !pairs[i].left_out;
	return n;
}

/* Order pairs by n_global, then n_local, as the starting grid is. */
static int
pair_cmp(const void *a, const void *b)
{
	const RankPair *p = a,
			   *q = b;

	if (p->g != q->g)
		return p->g < q->g ? -1 : 1;
	return (p->l > q->l) - (p->l < q->l);
}

/* ------------------------------------------------------------------------
 * One pair: fit and evaluate
 * ------------------------------------------------------------------------
 */

/* The training clients and what each evaluation needs of them. */
typedef struct RankData
{
	ClientInput *train;
	int			ntrain;
	ClientInput *held;
	int			nheld;
	int64		train_skipped;	/* rows left out for missing values (missing => 'skip') */
	int64		held_skipped;
	int			d;
	const double *global_mean;	/* pooled training mean (scaled) */
	const int  *held_train;		/* each held-out client's training index, or -1 */
} RankData;

/* W (k x d, rows) = [U'; V_i'] of training client i (or U' alone for i < 0). */
static double *
stacked(const FitResult *res, const FitNode *node, int i, int d, int *r2)
{
	const FitClient *c = i >= 0 ? &node->clients[i] : NULL;
	int			r1 = res->rU;
	int			m = c ? c->k - c->lfirst : 0;
	double	   *W = palloc(sizeof(double) * d * Max(r1 + m, 1));

	for (int a = 0; a < r1; a++)
		linalg_copy(d, 1, res->U + a, r1, W + (int64) a * d, 1);	/* column a of U */
	for (int b = 0; b < m; b++)
		linalg_copy(d, 1, c->W + c->lfirst + b, c->k, W + (int64) (r1 + b) * d, 1);
	*r2 = m;
	return W;
}

/* The centre a client's rows are evaluated about: its training mean, the pooled mean or 0. */
static const double *
centre_of(const RankData *data, const FitOptions *opts, int train_index, double *zero)
{
	if (opts->center == FIT_CENTER_NONE)
		return zero;
	if (opts->center == FIT_CENTER_CLIENT && train_index >= 0)
		return PERPCA_STATS_MEAN(data->train[train_index].stats);
	return data->global_mean;
}

/* Evaluate one set of statistics against client i's components. */
static EvalFigures
evaluate_one(const PerpcaStats *s, const double *centre, const FitResult *res,
			 const FitNode *node, int i, int d, double *M)
{
	int			r2;
	double	   *W = stacked(res, node, i, d, &r2);
	EvalFigures f;

	perpca_stats_moment(s, centre, M);
	f = evaluate_figures(M, d, W, res->rU, r2);
	pfree(W);
	return f;
}

/* Fit pair p on the training clients: its diagnostics into p, its components into res. */
static FitNode *
fit_only(RankPair *p, const RankData *data, FitOptions *opts, const double *fit_centre,
		 FitResult *res)
{
	FitNode    *node;
	FitBackend *be;
	FitDiagnostics *diag = palloc0(sizeof(FitDiagnostics));

	opts->n_global = p->g;
	opts->n_local = p->l;
	for (int i = 0; i < data->ntrain; i++)
		data->train[i].r2 = p->l;
	clients_check(data->train, data->ntrain, p->g, true);
	node = clients_node(data->train, data->ntrain, p->g, fit_centre, opts);
	be = node_backend(node);
	diag->opts = *opts;
	fit_run(be, opts, res, diag);
	p->objective = diag->objective;
	p->rounds = diag->rounds;
	p->converged = diag->converged;
	p->theta = node_theta(node, be->weight);
	return node;
}

/* The mean error of the fitted pair p over the training clients. */
static void
train_figures(RankPair *p, const RankData *data, const FitOptions *opts, const FitResult *res,
			  const FitNode *node, double *M, double *zero)
{
	double		err = 0;

	for (int i = 0; i < data->ntrain; i++)
	{
		EvalFigures f = evaluate_one(data->train[i].stats, centre_of(data, opts, i, zero),
									 res, node, i, data->d, M);

		CHECK_FOR_INTERRUPTS();
		err += f.error;
	}
	p->train_error = err / data->ntrain;
}

/* The held-out errors and explained ratio of the fitted pair p (clients with rows only). */
static void
heldout_figures(RankPair *p, const RankData *data, const FitOptions *opts, const FitResult *res,
				const FitNode *node, double *M, double *zero)
{
	double		err = 0,
				err_rows = 0,
				rows = 0,
				explained = 0,
				total = 0;
	int			counted = 0;

	for (int h = 0; h < data->nheld; h++)
	{
		const PerpcaStats *s = data->held[h].stats;
		int			i = data->held_train[h];
		EvalFigures f;

		CHECK_FOR_INTERRUPTS();
		if (s->n <= 0)
			continue;
		f = evaluate_one(s, centre_of(data, opts, i, zero), res, node, i, data->d, M);
		err += f.error;
		err_rows += (double) s->n * f.error;
		rows += (double) s->n;
		explained += f.global + f.local;
		total += f.total;
		counted++;
	}
	p->heldout_error = counted > 0 ? err / counted : NAN;
	p->heldout_error_samples = rows > 0 ? err_rows / rows : NAN;
	p->heldout_ratio = total > 0 ? explained / total : NAN;
	p->heldout_variance = counted > 0 ? total / counted : NAN;
}

/* Fit pair p on the training clients and evaluate it on both parts. */
static void
fit_pair(RankPair *p, const RankData *data, FitOptions *opts, const double *fit_centre)
{
	int			d = data->d;
	FitResult	res = {0};
	double	   *M = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * d * d);
	double	   *zero = palloc0(sizeof(double) * d);
	FitNode    *node = fit_only(p, data, opts, fit_centre, &res);

	train_figures(p, data, opts, &res, node, M, zero);
	heldout_figures(p, data, opts, &res, node, M, zero);
}

/* ------------------------------------------------------------------------
 * The SQL function
 * ------------------------------------------------------------------------
 */

/* A float8 argument, or dflt when NULL. */
static double
float_arg(FunctionCallInfo fcinfo, int argno, double dflt)
{
	return PG_ARGISNULL(argno) ? dflt : PG_GETARG_FLOAT8(argno);
}

/* Read the settings of the rules and check them. */
static void
scan_settings(FunctionCallInfo fcinfo, RankScan *scan, double *holdout)
{
	scan->within = float_arg(fcinfo, A_WITHIN, NAN);
	scan->min_theta = float_arg(fcinfo, A_MIN_THETA, NAN);
	scan->target = float_arg(fcinfo, A_TARGET, NAN);
	*holdout = float_arg(fcinfo, A_HOLDOUT, NAN);
	if (!(scan->within >= 0) || isinf(scan->within) || isnan(scan->min_theta) ||
		!(*holdout > 0 && *holdout < 1))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("within must be >= 0, min_theta not NULL and holdout between 0 and 1 (exclusive)")));
	if (!PG_ARGISNULL(A_TARGET) && !(scan->target > 0 && scan->target <= 1))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("target_explained_ratio must be above 0 and at most 1, got %g", scan->target),
				 errhint("Pass NULL for the error rule (within).")));
}

/*
 * Show the pair being fitted in pg_stat_activity.application_name (reset
 * with the transaction), and in a message: a NOTICE with verbose, else at
 * DEBUG1 (progress is not news).
 */
static void
show_pair(int k, int n, const RankPair *p, bool verbose)
{
	char	   *name = psprintf("perpca_choose_ranks %d/%d: n_global %d, n_local %d", k, n, p->g, p->l);

	ereport(verbose ? NOTICE : DEBUG1,
			(errmsg("perpca_choose_ranks: fitting pair %d/%d (n_global %d, n_local %d)", k, n, p->g, p->l)));
	(void) set_config_option("application_name", name, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_LOCAL, true, 0, false);
	pfree(name);
}

/* Append one row of the result (with the rows each part left out for missing values). */
static void
put_pair(ReturnSetInfo *rsinfo, const RankPair *p, bool recommended, const RankData *data)
{
	Datum		values[NCOLS];
	bool		nulls[NCOLS] = {0};
	bool		fitted = !p->left_out;

	values[0] = Int32GetDatum(p->g);
	values[1] = Int32GetDatum(p->l);
	values[2] = Float8GetDatum(p->objective);
	values[3] = Float8GetDatum(p->train_error);
	values[4] = Float8GetDatum(p->heldout_error);
	values[5] = Float8GetDatum(p->heldout_error_samples);
	values[6] = Float8GetDatum(p->heldout_ratio);
	values[7] = Float8GetDatum(p->theta);
	values[8] = Int32GetDatum(p->rounds);
	values[9] = BoolGetDatum(p->converged);
	values[10] = Float8GetDatum(p->seconds);
	for (int c = 2; c <= 10; c++)
		nulls[c] = !fitted || (c != 8 && c != 9 && !isfinite(DatumGetFloat8(values[c])));
	values[11] = BoolGetDatum(recommended);
	nulls[12] = p->note == NULL && p->added == 0;
	if (p->added > 0)
		values[12] = CStringGetTextDatum(psprintf("%s; added when the grid was widened (widening %d)",
												  p->note ? p->note : "", p->added));
	else
		values[12] = nulls[12] ? (Datum) 0 : CStringGetTextDatum(p->note);
	values[13] = Int64GetDatum(data->train_skipped);
	values[14] = Int64GetDatum(data->held_skipped);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* The training part: the query, or one side of its split (*held the other). */
static void
train_source(FunctionCallInfo fcinfo, double holdout, PerpcaMissing mode, RowSource *train,
			 RowSource *held)
{
	char	   *query = fit_text_arg(fcinfo, A_QUERY, "query");
	RowSource	all;

	if (!PG_ARGISNULL(A_HELDOUT))
	{
		row_source_open(train, query, "query", mode);
		return;
	}
	row_source_plan(&all, query, "query", mode);
	split_source(&all, (int) rint(holdout * 10000), false, train);
	split_source(&all, (int) rint(holdout * 10000), true, held);
	held->what = "held-out query";
}

/*
 * The held-out client, first by name, whose dimension is not the training
 * rows' (NULL when none): the error names the same client whatever order
 * the plan returned the groups in.
 */
static const ClientInput *
held_of_other_dimension(const RankData *data)
{
	const ClientInput *odd = NULL;

	for (int h = 0; h < data->nheld; h++)
		if (data->held[h].stats->dim != data->d &&
			(odd == NULL || strcmp(data->held[h].name, odd->name) < 0))
			odd = &data->held[h];
	return odd;
}

/*
 * Read both parts as statistics per client (the held-out query planned once
 * the training rows are read); the held-out rows must have the training
 * dimension.
 */
static void
read_parts(RankData *data, FunctionCallInfo fcinfo, double holdout, const FitOptions *opts,
		   MemoryContext cxt)
{
	RowSource	train,
				held;
	const ClientInput *odd;

	train_source(fcinfo, holdout, (PerpcaMissing) opts->missing, &train, &held);
	perpca_report_phase("perpca_choose_ranks: reading the training rows");
	data->train = clients_read(&train, &(ClientsRead) {0, true, "perpca_choose_ranks", false, false},
							   cxt, &data->ntrain, &data->train_skipped);
	if (data->ntrain == 0)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_BAD_VALUE),
				 errmsg("the training part of the query has no rows")));
	perpca_report_phase("perpca_choose_ranks: reading the held-out rows");
	if (!PG_ARGISNULL(A_HELDOUT))
		row_source_open(&held, text_to_cstring(PG_GETARG_TEXT_PP(A_HELDOUT)), "held-out query",
						(PerpcaMissing) opts->missing);
	data->held = clients_read(&held, &(ClientsRead) {0, true, "perpca_choose_ranks (held-out rows)", false, false},
							  cxt, &data->nheld, &data->held_skipped);
	clients_check(data->train, data->ntrain, 0, true);
	clients_refuse_sketches(data->train, data->ntrain, "perpca_choose_ranks",
							"Pass the rows: perpca_choose_ranks computes exact statistics of each part.");
	clients_refuse_sketches(data->held, data->nheld, "perpca_choose_ranks",
							"Pass the held-out rows, or exact perpca_stats values of them.");
	data->d = data->train[0].stats->dim;
	if ((odd = held_of_other_dimension(data)) != NULL)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_DIMENSION),
				 errmsg("held-out client \"%s\" has dimension %d, the training rows have %d",
						odd->name, odd->stats->dim, data->d)));
}

/* Scale both parts by the training scale, as the fit would, and set the pooled training mean. */
static void
scale_parts(RankData *data, const FitOptions *opts)
{
	bool	   *constant;
	double	   *scale = clients_scale(data->train, data->ntrain, opts->scale, &constant);
	double	   *mean;
	double		rows;

	if (scale != NULL)
		clients_scale_by(data->held, data->nheld, scale);
	mean = palloc(sizeof(double) * data->d);
	rows = clients_mean_sum(data->train, data->ntrain, mean);
	for (int j = 0; j < data->d; j++)
		mean[j] /= rows;
	data->global_mean = mean;
}

/* Pair each held-out client with the training client of the same name (-1 when none). */
static void
pair_held_with_train(RankData *data)
{
	const ClientInput **sorted = palloc(sizeof(ClientInput *) * data->ntrain);
	int		   *held_train;

	for (int i = 0; i < data->ntrain; i++)
		sorted[i] = &data->train[i];
	qsort(sorted, data->ntrain, sizeof(ClientInput *), clients_name_cmp);
	held_train = palloc(sizeof(int) * Max(data->nheld, 1));
	for (int h = 0; h < data->nheld; h++)
	{
		const ClientInput *key = &data->held[h];
		const ClientInput **s = bsearch(&key, sorted, data->ntrain, sizeof(ClientInput *), clients_name_cmp);

		held_train[h] = s == NULL ? -1 : (int) (*s - data->train);
	}
	data->held_train = held_train;
}

/* Read both parts, scale them as the fit would, and pair each held-out client with its training client. */
static RankData *
read_data(FunctionCallInfo fcinfo, FitOptions *opts, double holdout, MemoryContext cxt)
{
	RankData   *data = palloc0(sizeof(RankData));

	read_parts(data, fcinfo, holdout, opts, cxt);
	scale_parts(data, opts);
	pair_held_with_train(data);
	return data;
}

/*
 * Fit and evaluate every pair of pairs that is not left out, each in a
 * memory context of its own, reset after it; the scan's context is current.
 */
static void
fit_pairs(RankPair *pairs, int npairs, const RankData *data, FitOptions *opts)
{
	int			nfit = count_fitted(pairs, npairs);
	MemoryContext scancxt = CurrentMemoryContext;
	MemoryContext paircxt = AllocSetContextCreate(scancxt, "perpca_choose_ranks pair", ALLOCSET_DEFAULT_SIZES);
	double	   *mean_sum = palloc(sizeof(double) * data->d);
	const double *fit_centre = clients_center(opts->center, mean_sum,
											  clients_mean_sum(data->train, data->ntrain, mean_sum), data->d);
	int			k = 0;

	for (int i = 0; i < npairs; i++)
	{
		instr_time	start,
					elapsed;

		if (pairs[i].left_out)
			continue;
		show_pair(++k, nfit, &pairs[i], opts->verbose);
		perpca_report_phase("perpca_choose_ranks: pair %d/%d (n_global %d, n_local %d)",
							k, nfit, pairs[i].g, pairs[i].l);
		INSTR_TIME_SET_CURRENT(start);
		MemoryContextSwitchTo(paircxt);
		fit_pair(&pairs[i], data, opts, fit_centre);
		MemoryContextSwitchTo(scancxt);
		MemoryContextReset(paircxt);
		INSTR_TIME_SET_CURRENT(elapsed);
		INSTR_TIME_SUBTRACT(elapsed, start);
		pairs[i].seconds = INSTR_TIME_GET_DOUBLE(elapsed);
	}
	MemoryContextDelete(paircxt);
}

/* The ranks to scan: the distinct non-negative values of global_ranks and local_ranks. */
typedef struct RankLists
{
	int		   *gs;
	int			ng;
	int		   *ls;
	int			nl;
} RankLists;

/* Read and check every argument, in the order their errors are raised. */
static void
scan_args(FunctionCallInfo fcinfo, RankScan *scan, double *holdout, FitOptions *opts,
		  RankLists *lists)
{
	if (PG_ARGISNULL(A_QUERY))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NULL),
				 errmsg("query must not be NULL")));
	scan_settings(fcinfo, scan, holdout);
	scan->max_widenings = MAX_WIDENINGS;
	scan->widenings = 0;
	scan->quiet = false;
	fit_options_parse_call_no_ranks(fcinfo, opts);	/* by argument name; ranks per pair */
	lists->ng = lists->nl = -1;	/* NULL: the default grid, from the data (default_grid) */
	if (!PG_ARGISNULL(A_GLOBAL_RANKS))
		lists->gs = ranks_arg(fcinfo, A_GLOBAL_RANKS, "global_ranks", &lists->ng);
	if (!PG_ARGISNULL(A_LOCAL_RANKS))
		lists->ls = ranks_arg(fcinfo, A_LOCAL_RANKS, "local_ranks", &lists->nl);
}

/* The ranks 0 .. top, with room to widen. */
static int *
ranks_upto(int top, int *n)
{
	int		   *out = palloc(sizeof(int) * (top + 1 + MAX_WIDENINGS));

	for (int r = 0; r <= top; r++)
		out[r] = r;
	*n = top + 1;
	return out;
}

/*
 * The default grid, for a NULL global_ranks or local_ranks: 0 .. 3, or less
 * when d is small (up to d - 2, so that a pair of 1 and the largest rank
 * leaves a dimension to measure); local ranks also up to one less than the
 * fewest training rows of a client (what its centred rows span).  The
 * widening goes on from there while the recommendation sits on an edge.
 */
static void
default_grid(RankLists *lists, const RankData *data)
{
	int64		fewest = PG_INT64_MAX;
	int			top = Max(0, Min(DEFAULT_TOP_RANK, data->d - 2));

	for (int i = 0; i < data->ntrain; i++)
		fewest = Min(fewest, data->train[i].stats->n);
	if (lists->ng < 0)
		lists->gs = ranks_upto(top, &lists->ng);
	if (lists->nl < 0)
		lists->ls = ranks_upto((int) Max(0, Min(top, fewest - 1)), &lists->nl);
}

/*
 * Widen the grid one step on each side in edges (RANK_EDGE_ bits): a rank
 * one above the largest or one below the smallest of that side joins its
 * list, and its pairs with every rank of the other side are appended to
 * pairs (added = step).
 */
static void
widen(RankLists *lists, int edges, RankPair *pairs, int *npairs, int d, int step)
{
	if (edges & (RANK_EDGE_GLOBAL_UP | RANK_EDGE_GLOBAL_DOWN))
	{
		int			g = (edges & RANK_EDGE_GLOBAL_UP) ? lists->gs[lists->ng - 1] + 1 : lists->gs[0] - 1;

		for (int b = 0; b < lists->nl; b++)
			add_pair(pairs, npairs, g, lists->ls[b], d, step);
		lists->gs[lists->ng++] = g;
		qsort(lists->gs, lists->ng, sizeof(int), int_cmp);
	}
	if (edges & (RANK_EDGE_LOCAL_UP | RANK_EDGE_LOCAL_DOWN))
	{
		int			l = (edges & RANK_EDGE_LOCAL_UP) ? lists->ls[lists->nl - 1] + 1 : lists->ls[0] - 1;

		for (int a = 0; a < lists->ng; a++)
			add_pair(pairs, npairs, lists->gs[a], l, d, step);
		lists->ls[lists->nl++] = l;
		qsort(lists->ls, lists->nl, sizeof(int), int_cmp);
	}
}

/*
 * The edges of the grid that the recommendation r sits on and that widening
 * moves: a side of the grid with a single rank was fixed by the caller and
 * stays (the note still says when r sits on it).  One side per direction:
 * up before down.
 */
static int
edges_to_widen(const RankPair *pairs, int npairs, int r, const RankLists *lists, int d)
{
	int			edges = r >= 0 ? ranks_edges(pairs, npairs, &pairs[r], d) : 0;

	if (lists->ng < 2)
		edges &= ~(RANK_EDGE_GLOBAL_UP | RANK_EDGE_GLOBAL_DOWN);
	if (lists->nl < 2)
		edges &= ~(RANK_EDGE_LOCAL_UP | RANK_EDGE_LOCAL_DOWN);
	if (edges & RANK_EDGE_GLOBAL_UP)
		edges &= ~RANK_EDGE_GLOBAL_DOWN;
	if (edges & RANK_EDGE_LOCAL_UP)
		edges &= ~RANK_EDGE_LOCAL_DOWN;
	return edges;
}

/*
 * The grid over the data's dimension, each pair that is not left out fitted
 * and evaluated; while the recommended pair sits on an edge of the grid that
 * can move, the grid is widened one step there and the new pairs fitted, at
 * most scan->max_widenings times.  Returns the pairs (ordered by n_global,
 * n_local) and sets the recommendation *rec, its notes and NOTICEs.
 */
static RankPair *
scan_pairs(RankLists *lists, const RankData *data, FitOptions *opts, RankScan *scan,
		   int *npairs, int *rec)
{
	int			cap = (lists->ng + scan->max_widenings) * (lists->nl + scan->max_widenings);
	RankPair   *pairs = grid(lists->gs, lists->ng, lists->ls, lists->nl, data->d, cap, npairs);
	int			edges;

	if (count_fitted(pairs, *npairs) == 0)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("no pair of ranks to fit: need n_global, n_local >= 0 with 1 <= n_global + n_local < %d",
						data->d),
				 errdetail("A pair that uses all %d dimensions explains held-out rows exactly.", data->d)));
	fit_pairs(pairs, *npairs, data, opts);
	scan->quiet = true;
	while ((edges = edges_to_widen(pairs, *npairs, ranks_recommend(pairs, *npairs, scan), lists,
								   data->d)) != 0 && scan->widenings < scan->max_widenings)
	{
		int			from = *npairs;

		widen(lists, edges, pairs, npairs, data->d, ++scan->widenings);
		fit_pairs(pairs + from, *npairs - from, data, opts);
		qsort(pairs, *npairs, sizeof(RankPair), pair_cmp);
	}
	scan->quiet = false;
	*rec = ranks_recommend(pairs, *npairs, scan);
	if (count_fitted(pairs, *npairs) < *npairs)
		ereport(NOTICE,
				(errmsg("perpca_choose_ranks: %d pair(s) left out: n_global + n_local >= d = %d leaves no dimension to measure held-out error",
						*npairs - count_fitted(pairs, *npairs), data->d)));
	return pairs;
}

/* perpca_choose_ranks(query, heldout, global_ranks, local_ranks, within, min_theta, holdout, fit options..., target_explained_ratio) */
Datum
perpca_choose_ranks(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext scancxt,
				old;
	FitOptions	opts;
	RankScan	scan;
	RankLists	lists;
	double		holdout;
	char	   *app = pstrdup(GetConfigOption("application_name", false, false));

	InitMaterializedSRF(fcinfo, 0);
	scan_args(fcinfo, &scan, &holdout, &opts, &lists);
	scancxt = AllocSetContextCreate(CurrentMemoryContext, "perpca_choose_ranks", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(scancxt);
	PG_TRY();
	{
		RankData   *data = read_data(fcinfo, &opts, holdout, scancxt);
		RankPair   *pairs;
		int			npairs,
					rec;

		scan.d = data->d;
		default_grid(&lists, data);
		pairs = scan_pairs(&lists, data, &opts, &scan, &npairs, &rec);
		(void) set_config_option("application_name", app, PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_LOCAL, true, 0, false);
		MemoryContextSwitchTo(old);
		for (int i = 0; i < npairs; i++)
			put_pair(rsinfo, &pairs[i], i == rec, data);
	}
	PG_FINALLY();
	{
		perpca_restore_activity();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	MemoryContextDelete(scancxt);
	return (Datum) 0;
}
