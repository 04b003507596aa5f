/*
 * model_functions.c -- SQL functions on a stored model read by name: the
 * row functions, similarity, theta (the model bound by model_bind.c)
 *
 * Decomposition of a row x of client i with centre c (the client's mean,
 * the pooled mean or zero, as the fit's center option), y = D^-1 (x - c)
 * with D the diagonal of the model's scale_factors (the identity for an
 * unscaled model):
 *   scores       [U y; V_i y]                (standardized units)
 *   global part  c + D U^T U y      local part  D V_i^T V_i y
 *   residual     D (y - U^T U y - V_i^T V_i y)   (the three parts sum to x)
 *   error        ||y - U^T U y - V_i^T V_i y||^2  (standardized units, what the fit minimized)
 * U holds the global and V_i the local components as rows.  A client the
 * model has never seen is projected on the global components only, centred
 * at the pooled mean under center 'client'; its local part is zero.
 *
 * Rows with missing coordinates (missing => 'observed', missing.c): the
 * scores are the posterior mean of the model's probabilistic PCA form given
 * the observed coordinates; the parts and the reconstruction follow from
 * them at every coordinate, the residual and the error are those of the
 * observed coordinates (the residual is NULL at the gaps), and
 * perpca_model_impute fills the gaps with the reconstruction.  A row with
 * fewer observed coordinates than components gets NULL (one counted NOTICE
 * per call site and query).
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "error_kinds.h"
#include "linalg.h"
#include "missing.h"
#include "model_bind.h"
#include "model_lock.h"
#include "model_read.h"
#include "perpca.h"
#include "stats.h"

PG_FUNCTION_INFO_V1(perpca_model_name_parts);
PG_FUNCTION_INFO_V1(perpca_model_name_rule);
PG_FUNCTION_INFO_V1(perpca_model_impute);
PG_FUNCTION_INFO_V1(perpca_similarity);
PG_FUNCTION_INFO_V1(perpca_model_theta);

/* Arguments of the row functions: (model, client, x[, unknown]). */
#define ARG_MODEL 0
#define ARG_CLIENT 1
#define ARG_X 2
#define ARG_UNKNOWN 3
#define ARG_MISSING 4			/* (..., unknown, missing) of the float8[] row functions */

/* ------------------------------------------------------------------------
 * The client of a row
 * ------------------------------------------------------------------------
 */

/* The unknown option is 'error' (absent under the 0.1.0 signatures: 'global'). */
static bool
unknown_is_error(FunctionCallInfo fcinfo)
{
	text	   *t;
	int			len;

	if (PG_NARGS() <= ARG_UNKNOWN)
		return false;
	t = PG_GETARG_TEXT_PP(ARG_UNKNOWN);
	len = VARSIZE_ANY_EXHDR(t);
	if (len == 6 && memcmp(VARDATA_ANY(t), "global", 6) == 0)
		return false;
	if (len == 5 && memcmp(VARDATA_ANY(t), "error", 5) == 0)
		return true;
	ereport(ERROR,
			(errcode(PERPCA_ERRCODE_ARGUMENT),
			 errmsg("unknown must be 'global' or 'error', not \"%s\"", text_to_cstring(t))));
	return false;				/* keep the compiler quiet */
}

/* ------------------------------------------------------------------------
 * Projection of one row
 * ------------------------------------------------------------------------
 */

/* One row decomposed: the centre, y = x - centre, scores s = [U y; V_i y]. */
typedef struct RowProjection
{
	const ModelData *m;
	const ModelClient *c;		/* NULL: unseen client */
	const double *center;		/* NULL: no centering */
	int			r2;				/* local components used (0 for an unseen client) */
	bool		isnull;			/* too few observed coordinates: the result is NULL */
	double	   *y;
	double	   *s;
	double	   *out;
} RowProjection;

/* How a row is scored: its gaps, and what to do about them. */
typedef struct RowGaps
{
	bool		posterior;		/* the posterior mean (missing => 'observed', impute) */
	const bool *obs;			/* observed coordinates (NULL: all) */
	int			nobs;			/* their number */
	bool		impute;			/* no NULL for too few observed coordinates */
	bool		skip;			/* a row with gaps under missing => 'skip': NULL, counted */
} RowGaps;

static const RowGaps complete_row = {false, NULL, 0, false, false};

/* The row's centre (the client's mean, the pooled mean or none), r2, and y = (x - centre) / scale. */
static void
row_center(RowProjection *p, const double *x)
{
	const ModelData *m = p->m;

	p->center = m->center == CENTER_NONE ? NULL :
		m->center == CENTER_CLIENT && p->c != NULL ? p->c->mean : m->global_mean;
	p->r2 = p->c ? p->c->r2 : 0;
	for (int i = 0; i < m->d; i++)
		p->y[i] = p->center ? x[i] - p->center[i] : x[i];
	if (m->scale != NULL)
		for (int i = 0; i < m->d; i++)
			p->y[i] /= m->scale[i];
	p->isnull = false;
}

/* out = base (or zero) + alpha (U^T s_global if global) + alpha (V^T s_local if local). */
static void
row_combine(RowProjection *p, const double *base, double alpha, bool global, bool local)
{
	int			d = p->m->d;

	if (base)
		memcpy(p->out, base, sizeof(double) * d);
	else
		memset(p->out, 0, sizeof(double) * d);
	if (global)
		linalg_matvec(true, p->m->r1, d, alpha, p->m->U, p->s, 1.0, p->out);
	if (local && p->r2 > 0)
		linalg_matvec(true, p->r2, d, alpha, p->c->V, p->s + p->m->r1, 1.0, p->out);
}

/*
 * Centre x (d values, 0 at the gaps) and compute its scores: the
 * projection, or under g->posterior the posterior mean given the observed
 * coordinates, with y at the gaps set to the reconstruction (a zero residual
 * there).  p's model, client and scratch are set.
 */
static void
row_scores(RowProjection *p, const double *x, const RowGaps *g)
{
	const ModelData *m = p->m;

	row_center(p, x);
	if (!g->posterior)
	{
		linalg_matvec(false, m->r1, m->d, 1.0, m->U, p->y, 0.0, p->s);
		if (p->r2 > 0)
			linalg_matvec(false, p->r2, m->d, 1.0, p->c->V, p->y, 0.0, p->s + m->r1);
		return;
	}
	missing_posterior(m, p->c, p->y, g->obs, p->s);
	if (g->obs == NULL)
		return;
	row_combine(p, NULL, 1.0, true, true);
	for (int i = 0; i < m->d; i++)
		if (!g->obs[i])
			p->y[i] = p->out[i];
}

/*
 * Bind the model, find the client, and score x (row_scores).  A row with
 * fewer observed coordinates than scores gets p->isnull, unless g->impute.
 */
static void
row_project(FunctionCallInfo fcinfo, const double *x, int d, const RowGaps *g, RowProjection *p)
{
	ModelBinding *b = model_bind(fcinfo, PG_GETARG_TEXT_PP(ARG_MODEL));
	const ModelData *m = b->data;
	int			rank;

	p->m = m;
	p->c = model_bound_client(fcinfo, b, unknown_is_error(fcinfo));
	if (d != m->d)
		perpca_dim_mismatch(m->d, d, "x");
	p->isnull = true;
	if (g->skip)
	{
		missing_skip_row(fcinfo, &b->too_few);
		return;
	}
	rank = m->r1 + (p->c ? p->c->r2 : 0);
	if (g->posterior && g->obs != NULL && g->nobs < rank && !g->impute)
	{
		missing_too_few(fcinfo, &b->too_few, rank);
		return;
	}
	p->y = b->y;
	p->s = b->s;
	p->out = b->out;
	row_scores(p, x, g);
}

/* out = (centre if with_center) + D (U^T s_global if global + V^T s_local if local): data units. */
static void
row_part(RowProjection *p, bool global, bool local, bool with_center)
{
	const double *scale = p->m->scale;

	if (scale == NULL)
	{
		row_combine(p, with_center ? p->center : NULL, 1.0, global, local);
		return;
	}
	row_combine(p, NULL, 1.0, global, local);
	for (int i = 0; i < p->m->d; i++)
		p->out[i] = p->out[i] * scale[i] + (with_center && p->center ? p->center[i] : 0.0);
}

/* out = the residual y - U^T s_global - V^T s_local, times D when in data units. */
static void
row_residual(RowProjection *p, bool data_units)
{
	row_combine(p, p->y, -1.0, true, true);
	if (data_units && p->m->scale != NULL)
		for (int i = 0; i < p->m->d; i++)
			p->out[i] *= p->m->scale[i];
}

/*
 * The row functions on the row x (d values, 0 at the gaps g) of the call's
 * model and client: op's result, *n values (1 for the error) in memory of
 * the call site, valid until its next call; NULL when the row has too few
 * observed coordinates.
 */
static const double *
model_row(FunctionCallInfo fcinfo, PerpcaRowOp op, const double *x, int d, const RowGaps *g, int *n)
{
	RowProjection p;

	row_project(fcinfo, x, d, g, &p);
	if (p.isnull)
		return NULL;
	*n = p.m->d;
	switch (op)
	{
		case PERPCA_ROW_SCORES:
			*n = p.m->r1 + p.r2;
			return p.s;
		case PERPCA_ROW_GLOBAL_PART:
			row_part(&p, true, false, true);
			break;
		case PERPCA_ROW_LOCAL_PART:
			row_part(&p, false, true, false);
			break;
		case PERPCA_ROW_RECONSTRUCT:
			row_part(&p, true, true, true);
			break;
		case PERPCA_ROW_RESIDUAL:
			row_residual(&p, true);
			break;
		case PERPCA_ROW_ERROR:
			row_residual(&p, false);
			p.out[0] = linalg_dot(p.m->d, p.out, p.out);
			*n = 1;
			break;
	}
	return p.out;
}

/*
 * The row functions on the complete row x (d finite values): perpca_vector's
 * overloads share them.
 */
const double *
perpca_model_row(FunctionCallInfo fcinfo, PerpcaRowOp op, const double *x, int d, int *n)
{
	return model_row(fcinfo, op, x, d, &complete_row, n);
}

/* The key of the call's client, for the error of a row with a gap. */
static const char *
row_client_name(FunctionCallInfo fcinfo)
{
	return model_key_name(fcinfo, unknown_is_error(fcinfo));
}

/*
 * The float8[] row argument read under the call's missing option: its
 * values (0 at the gaps), its dimension and its gaps.
 */
static const double *
model_row_arg(FunctionCallInfo fcinfo, int *d, RowGaps *g)
{
	PerpcaMissing mode = missing_arg(fcinfo, ARG_MISSING);
	const double *x;

	g->nobs = missing_read_client_row(fcinfo, PG_GETARG_ARRAYTYPE_P(ARG_X), mode, row_client_name,
									  PERPCA_OBSERVED_HINT, d, &x, &g->obs);
	g->posterior = mode == PERPCA_MISSING_OBSERVED;
	g->impute = false;
	g->skip = mode == PERPCA_MISSING_SKIP && g->obs != NULL;
	return x;
}

/*
 * The model's row functions on a float8[] row: the scores (global, then the
 * client's local); the global part, centre + U^T U (x - centre), what the
 * clients share; the local part, V_i^T V_i (x - centre), what is unique to
 * the client; the reconstruction, their sum; the residual, x minus it (NULL
 * at the row's gaps); the error, the squared norm of the (standardized)
 * residual, an anomaly score.
 */
static Datum
model_row_array(FunctionCallInfo fcinfo, PerpcaRowOp op)
{
	int			d,
				n;
	RowGaps		g;
	const double *x = model_row_arg(fcinfo, &d, &g);
	const double *out = model_row(fcinfo, op, x, d, &g, &n);

	if (out == NULL)
		PG_RETURN_NULL();
	if (op == PERPCA_ROW_ERROR)
		PG_RETURN_FLOAT8(out[0]);
	if (op == PERPCA_ROW_RESIDUAL && g.obs != NULL)
		PG_RETURN_ARRAYTYPE_P(missing_build_masked(out, g.obs, n));
	PG_RETURN_ARRAYTYPE_P(perpca_vector_build(out, n));
}

#define ROW_ARRAY_FUNCTION(name, op) \
PG_FUNCTION_INFO_V1(name); \
Datum name(PG_FUNCTION_ARGS) { return model_row_array(fcinfo, op); }

ROW_ARRAY_FUNCTION(perpca_model_scores, PERPCA_ROW_SCORES)
ROW_ARRAY_FUNCTION(perpca_model_global_part, PERPCA_ROW_GLOBAL_PART)
ROW_ARRAY_FUNCTION(perpca_model_local_part, PERPCA_ROW_LOCAL_PART)
ROW_ARRAY_FUNCTION(perpca_model_reconstruct, PERPCA_ROW_RECONSTRUCT)
ROW_ARRAY_FUNCTION(perpca_model_residual, PERPCA_ROW_RESIDUAL)
ROW_ARRAY_FUNCTION(perpca_model_error, PERPCA_ROW_ERROR)

/* filled = x at the observed coordinates, the reconstruction of the scored row p at the gaps. */
static void
row_fill(RowProjection *p, const double *x, const bool *obs, double *filled)
{
	row_part(p, true, true, true);
	for (int i = 0; i < p->m->d; i++)
		filled[i] = obs[i] ? x[i] : p->out[i];
}

/*
 * x with each missing element replaced by its conditional expectation given
 * the observed ones under the model's probabilistic form (the
 * reconstruction there, in the data's units); observed elements unchanged,
 * bit for bit.  A row with no observed element gets the client's centre.
 */
Datum
perpca_model_impute(PG_FUNCTION_ARGS)
{
	int			d,
				n;
	RowGaps		g = {true, NULL, 0, true, false};
	const double *x;
	RowProjection p;
	double	   *filled;

	g.nobs = missing_read_row(PG_GETARG_ARRAYTYPE_P(ARG_X), PERPCA_MISSING_OBSERVED, &d, &x, &g.obs);
	if (g.obs == NULL)
	{
		/* nothing to fill (the model and the client are still checked) */
		model_row(fcinfo, PERPCA_ROW_SCORES, x, d, &complete_row, &n);
		PG_RETURN_ARRAYTYPE_P(perpca_vector_build(x, d));
	}
	row_project(fcinfo, x, d, &g, &p);
	filled = palloc(sizeof(double) * d);
	row_fill(&p, x, g.obs, filled);
	PG_RETURN_ARRAYTYPE_P(perpca_vector_build(filled, d));
}

void
model_impute_row(const ModelData *m, const ModelClient *c, const double *x, const bool *obs,
				 double *filled)
{
	RowGaps		g = {true, obs, 0, true, false};
	RowProjection p = {.m = m,.c = c};

	p.y = palloc(sizeof(double) * m->d);
	p.s = palloc(sizeof(double) * (m->r1 + m->r2max));
	p.out = palloc(sizeof(double) * m->d);
	row_scores(&p, x, &g);
	row_fill(&p, x, obs, filled);
	pfree(p.y);
	pfree(p.s);
	pfree(p.out);
}

/* ------------------------------------------------------------------------
 * Client similarity
 * ------------------------------------------------------------------------
 */

/* The state of one perpca_similarity call: the pair to return next. */
typedef struct SimilarityScan
{
	ModelData  *m;				/* referenced until the call's memory goes */
	MemoryContextCallback unref;
	bool		all_pairs;
	int			i;
	int			j;
	Datum	   *names;			/* each client's name as text, made once */
	double	   *G;				/* r2max x r2max scratch */
	TupleDesc	desc;
} SimilarityScan;

static void
similarity_unref(void *arg)
{
	model_unref((ModelData *) arg);
}

/*
 * The scan of a perpca_similarity call, in mcxt: the model opened and
 * referenced until mcxt goes (fn_extra is the SRF's: the model is opened
 * here, not bound), the clients' names as text, the scratch, the first pair.
 */
static SimilarityScan *
similarity_begin(FunctionCallInfo fcinfo, MemoryContext mcxt)
{
	ModelData  *m = model_open(PG_GETARG_TEXT_PP(0));
	MemoryContext old = MemoryContextSwitchTo(mcxt);
	SimilarityScan *scan = palloc0(sizeof(SimilarityScan));

	scan->m = m;
	m->refcount++;
	scan->unref.func = similarity_unref;
	scan->unref.arg = m;
	MemoryContextRegisterResetCallback(mcxt, &scan->unref);
	scan->all_pairs = PG_NARGS() > 1 ? PG_GETARG_BOOL(1) : true;
	scan->j = scan->all_pairs ? 0 : 1;
	scan->names = palloc(sizeof(Datum) * Max(m->nclients, 1));
	for (int c = 0; c < m->nclients; c++)
		scan->names[c] = CStringGetTextDatum(m->clients[c].name);
	scan->G = palloc(sizeof(double) * Max(m->r2max * m->r2max, 1));
	if (get_call_result_type(fcinfo, NULL, &scan->desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "perpca_similarity must return a record");
	scan->desc = BlessTupleDesc(scan->desc);
	MemoryContextSwitchTo(old);
	return scan;
}

/*
 * rho_ab = ||P_Va - P_Vb||_F^2 / r2 for each unordered pair of clients, a < b
 * (bytewise), or with all_pairs every ordered pair and each client with
 * itself.  ||P_Va - P_Vb||_F^2 = r_a + r_b - 2 ||V_a V_b^T||_F^2 and
 * r2 = (r_a + r_b) / 2 (the paper's r2 when all clients have the same local rank).
 *
 * The pairs are returned one per call (value-per-call), in bounded memory:
 * the names are made once, a pair's row in the per-call context.  Called in
 * FROM, PostgreSQL keeps the rows in a tuplestore that spills to disk beyond
 * work_mem; in the select list (or under a LIMIT there) they stream.
 */
Datum
perpca_similarity(PG_FUNCTION_ARGS)
{
	FuncCallContext *fctx;
	SimilarityScan *scan;

	if (SRF_IS_FIRSTCALL())
	{
		fctx = SRF_FIRSTCALL_INIT();
		fctx->user_fctx = similarity_begin(fcinfo, fctx->multi_call_memory_ctx);
	}
	fctx = SRF_PERCALL_SETUP();
	scan = fctx->user_fctx;
	/* the next pair: j runs over i+1.. (all_pairs: 0..), then i moves on */
	while (scan->i < scan->m->nclients && scan->j >= scan->m->nclients)
	{
		scan->i++;
		scan->j = scan->all_pairs ? 0 : scan->i + 1;
	}
	if (scan->i < scan->m->nclients)
	{
		const ModelData *m = scan->m;
		Datum		row[3];
		bool		nulls[3] = {false, false, false};

		CHECK_FOR_INTERRUPTS();
		row[0] = scan->names[scan->i];
		row[1] = scan->names[scan->j];
		row[2] = Float8GetDatum(model_client_distance(m, &m->clients[scan->i], &m->clients[scan->j], scan->G));
		scan->j++;
		SRF_RETURN_NEXT(fctx, HeapTupleGetDatum(heap_form_tuple(scan->desc, row, nulls)));
	}
	SRF_RETURN_DONE(fctx);
}

/* The model's theta_est, with a hint when it is below the threshold. */
Datum
perpca_model_theta(PG_FUNCTION_ARGS)
{
	const ModelData *m = model_bind(fcinfo, PG_GETARG_TEXT_PP(0))->data;
	bool		small = !m->theta_est.isnull && m->theta_est.value < PG_GETARG_FLOAT8(1);
	Datum		values[2] = {Float8GetDatum(m->theta_est.value), (Datum) 0};
	bool		nulls[2] = {m->theta_est.isnull, !small};

	if (small)
		values[1] = CStringGetTextDatum("theta_est is small: the local components of the clients are nearly aligned, so global and local parts are not separable; lower n_local");
	PG_RETURN_DATUM(model_result_record(fcinfo, values, nulls));
}

/* perpca_internal.model_name_parts(model text) RETURNS text[]: {[schema,] base} (model_lock.h). */
Datum
perpca_model_name_parts(PG_FUNCTION_ARGS)
{
	List	   *parts = model_name_parts(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	Datum		elems[2];
	int			n = 0;
	ListCell   *lc;

	foreach(lc, parts)
		elems[n++] = CStringGetTextDatum((char *) lfirst(lc));
	PG_RETURN_ARRAYTYPE_P(construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT));
}

/* perpca_internal.perpca_model_name_rule() RETURNS text: MODEL_NAME_RULE; 0.3.0 dropped the SQL
 * function, the SQL of 0.2.0 (sql/released) names the symbol until ALTER EXTENSION UPDATE. */
Datum
perpca_model_name_rule(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(cstring_to_text(MODEL_NAME_RULE));
}
