/*
 * missing.c -- rows with missing coordinates on a stored model
 *
 * The row functions of a model (model_functions.c) take missing => 'error' (the
 * default: a NULL, NaN or infinite element is an error naming it) or
 * 'observed'.  With 'observed' a row is scored under the model's
 * probabilistic form, probabilistic PCA (Tipping and Bishop 1999) with the
 * client's components:
 *
 *   y = W' z + e,   z ~ N(0, diag(l)),   e ~ N(0, s2 I)
 *
 * in the units the fit saw (y = D^-1 (x - centre), D the model's scale
 * factors), where W holds the global components U and the client's local
 * components V_i as rows, s2 is the client's mean discarded variance (its
 * total variance minus the variance the r components capture, over d - r)
 * and l_k = max(lambda_k - s2, 0) with lambda_k the client's variance along
 * component k: the model's covariance W' diag(l) W + s2 I then has the
 * client's variances along the components and s2 across them.  The client's
 * variance along a local component is stored with it; along the global ones
 * the model stores the fit's weighted mean over clients, which is rescaled
 * so that their sum is the client's own captured share (global_ratio x
 * total_variance).  A client the model does not know uses the global
 * components with the model's variances and total variance.
 *
 * Scores are the posterior mean of z given the observed coordinates O:
 *
 *   E[z | y_O] = L (s2 I + L W_O W_O' L)^-1 L W_O y_O,   L = diag(sqrt(l)),
 *
 * an r x r symmetric positive definite system.  Unlike a least-squares fit
 * of W_O to y_O it shrinks each score towards 0 by how much of the observed
 * signal the noise could explain, so few observed coordinates do not
 * overfit.  (On a complete row it is the projection W y with each score
 * multiplied by l_k / lambda_k.)  The conditional expectation of the missing
 * coordinates is W_M' E[z | y_O], which is what perpca_model_impute returns
 * there (in the data's units).
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "error_kinds.h"
#include "linalg.h"
#include "missing.h"
#include "perpca.h"
#include "row_reader.h"
#include "stats.h"

/* The hint of the row functions' error for a missing value (stats.h). */
#define OBSERVED_HINT PERPCA_OBSERVED_HINT

PerpcaMissing
missing_arg(FunctionCallInfo fcinfo, int argno)
{
	if (PG_NARGS() > argno && PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NULL),
				 errmsg("missing must be 'error', 'skip' or 'observed', not NULL")));
	return row_missing_arg(fcinfo, argno, PERPCA_MISSING_ERROR);
}

int
missing_read_row(ArrayType *a, PerpcaMissing mode, int *d, const double **x, const bool **obs)
{
	return missing_read_client_row(NULL, a, mode, NULL, OBSERVED_HINT, d, x, obs);
}

/* The error of element j (of d) of a row under missing => 'error', naming the row's client when known. */
static pg_noreturn void
row_gap_error(int j, int d, bool isnull, double v, const char *client, const char *hint)
{
	const char *kind = isnull ? "NULL" : isnan(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity";

	if (client == NULL)
		perpca_row_element_error("x", j, d, isnull, v, hint);
	ereport(ERROR,
			(errcode(isnull ? PERPCA_ERRCODE_NULL : PERPCA_ERRCODE_BAD_VALUE),
			 errmsg("x element %d of %d is %s, in the row of client \"%s\"", j + 1, d, kind, client),
			 errhint("%s", hint)));
}

int
missing_read_client_row(FunctionCallInfo fcinfo, ArrayType *a, PerpcaMissing mode,
						MissingRowClient client, const char *hint, int *d, const double **x,
						const bool **obs)
{
	const double *data = perpca_vector_shape_nulls(a, d, "x");
	const bits8 *bitmap = ARR_NULLBITMAP(a);
	double	   *buf;
	bool	   *seen;
	int			nobs = 0;

	if (bitmap == NULL && perpca_first_nonfinite(data, *d) < 0)
	{
		/* the common case: a complete row, read in place */
		*x = data;
		*obs = NULL;
		return *d;
	}
	buf = palloc(sizeof(double) * *d);
	seen = palloc(sizeof(bool) * *d);
	for (int j = 0; j < *d; j++)
	{
		bool		isnull = bitmap != NULL && !(bitmap[j / 8] & (1 << (j % 8)));
		double		v = isnull ? 0.0 : *data++;

		if (mode == PERPCA_MISSING_ERROR && (isnull || !isfinite(v)))
			row_gap_error(j, *d, isnull, v, client ? client(fcinfo) : NULL, hint);
		seen[j] = !isnull && isfinite(v);
		buf[j] = seen[j] ? v : 0.0;
		nobs += seen[j];
	}
	*x = buf;
	*obs = seen;
	return nobs;
}

/* ------------------------------------------------------------------------
 * The prior: variances along the components and the noise
 * ------------------------------------------------------------------------
 */

/*
 * The value of a stored variance figure, or an error when the model lacks
 * it (a model stored before its column existed).
 */
static double
figure(ModelFloat f, const char *what)
{
	if (f.isnull || !isfinite(f.value))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_BAD_VALUE),
				 errmsg("the model has no %s, which missing => 'observed' needs", what),
				 errhint("Retrain the model with perpca_train().")));
	return f.value;
}

/*
 * lambda (r1 + r2 values: the client's variance along each component) and
 * the noise variance s2, for client c (NULL: a client the model does not
 * know, global components only).
 */
static double
prior_variances(const ModelData *m, const ModelClient *c, double *lambda)
{
	int			r1 = m->r1;
	int			r2 = c ? c->r2 : 0;
	double		gsum = 0.0;
	double		captured = 0.0;
	double		total;
	double		scale = 1.0;
	double		s2;

	for (int k = 0; k < r1; k++)
		gsum += lambda[k] = Max(figure(m->global_variance[k], "global component variance"), 0.0);
	if (c != NULL)
	{
		total = figure(c->total_variance, "client total variance");
		/*
		 * the client's own captured share, spread as the fit's mean variances
		 * are; a client without variance (one row, or equal rows) has no
		 * ratio and captures nothing: its rows are its centre
		 */
		if (total <= 0.0)
			scale = 0.0;
		else if (gsum > 0.0)
			scale = Max(figure(c->global_ratio, "client global ratio"), 0.0) * total / gsum;
		for (int k = 0; k < r1; k++)
			lambda[k] *= scale;
		for (int k = 0; k < r2; k++)
			lambda[r1 + k] = total <= 0.0 ? 0.0 :
				Max(figure(c->variance[k], "local component variance"), 0.0);
	}
	else
		total = figure(m->total_variance, "total variance");
	for (int k = 0; k < r1 + r2; k++)
		captured += lambda[k];
	s2 = m->d > r1 + r2 ? Max(total - captured, 0.0) / (m->d - r1 - r2) : 0.0;
	/* a floor, so that the system stays definite when nothing is discarded */
	return Max(s2, 1e-12 * Max(total, DBL_MIN) / m->d);
}

/* Row k of the stacked components [U; V_i]. */
static inline const double *
component_row(const ModelData *m, const ModelClient *c, int k)
{
	return k < m->r1 ? m->U + (int64) k * m->d : c->V + (int64) (k - m->r1) * m->d;
}

/* The sum of a[j] * b[j] over the observed entries j (all when obs is NULL). */
static double
observed_dot(const double *a, const double *b, const bool *obs, int d)
{
	double		t = 0.0;

	for (int j = 0; j < d; j++)
		if (obs == NULL || obs[j])
			t += a[j] * b[j];
	return t;
}

void
missing_posterior(const ModelData *m, const ModelClient *c, const double *y, const bool *obs,
				  double *z)
{
	int			d = m->d;
	int			r = m->r1 + (c ? c->r2 : 0);
	double	   *lambda = palloc(sizeof(double) * Max(r, 1));
	double	   *root = palloc(sizeof(double) * Max(r, 1));
	double	   *G = palloc(sizeof(double) * Max(r * r, 1));
	double		s2 = prior_variances(m, c, lambda);

	for (int k = 0; k < r; k++)
		root[k] = sqrt(Max(lambda[k] - s2, 0.0));
	/* G = s2 I + L W_O W_O' L (lower triangle), z = L W_O y_O; then z = G^-1 z */
	for (int a = 0; a < r; a++)
	{
		const double *wa = component_row(m, c, a);

		z[a] = root[a] * observed_dot(wa, y, obs, d);
		for (int b = 0; b <= a; b++)
			G[a * r + b] = root[a] * root[b] * observed_dot(wa, component_row(m, c, b), obs, d) +
				(a == b ? s2 : 0.0);
	}
	if (linalg_spd_solve(r, G, z) != 0)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_INTERNAL),
				 errmsg("the posterior of a row with missing coordinates is not definite")));
	for (int k = 0; k < r; k++)
		z[k] *= root[k];
	pfree(lambda);
	pfree(root);
	pfree(G);
}

/* ------------------------------------------------------------------------
 * Rows with too few observed coordinates: NULL, and one counted NOTICE
 * ------------------------------------------------------------------------
 */

/* What a calling expression counts in its query. */
typedef struct TooFew
{
	int64		skipped;		/* rows with gaps left out under missing => 'skip' */
	int64		rows;			/* rows with fewer observed coordinates than components */
	int			rank;			/* the rank of the first one */
	const char *fname;			/* the function */
	MemoryContextCallback done;
} TooFew;

/*
 * The query is over (its memory goes): report the count, unless the
 * transaction is failing or ending (then there is nobody to tell).
 */
static void
too_few_report(void *arg)
{
	TooFew	   *t = (TooFew *) arg;

	if (!IsTransactionState())
		return;
	if (t->skipped > 0)
		row_report(t->fname, &(RowReport) {.skipped = t->skipped, .groups = -1});
	if (t->rows == 0)
		return;
	ereport(NOTICE,
			(errmsg("%s returned NULL for %lld row%s with fewer observed coordinates than the %d components",
					t->fname, (long long) t->rows, t->rows == 1 ? "" : "s", t->rank),
			 errhint("Such a row cannot be scored on the observed coordinates; perpca_model_impute() still fills its gaps.")));
}

/* The call site's counts, made at its first row. */
static TooFew *
call_site_counts(FunctionCallInfo fcinfo, void **slot)
{
	TooFew	   *t = (TooFew *) *slot;

	if (t == NULL)
	{
		MemoryContext cxt = fcinfo->flinfo->fn_mcxt;
		char	   *name = get_func_name(fcinfo->flinfo->fn_oid);

		t = MemoryContextAllocZero(cxt, sizeof(TooFew));

		t->fname = MemoryContextStrdup(cxt, name ? name : "perpca");
		t->done.func = too_few_report;
		t->done.arg = t;
		MemoryContextRegisterResetCallback(cxt, &t->done);
		*slot = t;
	}
	return t;
}

void
missing_too_few(FunctionCallInfo fcinfo, void **slot, int rank)
{
	TooFew	   *t = call_site_counts(fcinfo, slot);

	if (t->rows++ == 0)
		t->rank = rank;
}

void
missing_skip_row(FunctionCallInfo fcinfo, void **slot)
{
	call_site_counts(fcinfo, slot)->skipped++;
}

ArrayType *
missing_build_masked(const double *x, const bool *obs, int d)
{
	Datum	   *elems = palloc(sizeof(Datum) * d);
	bool	   *nulls = palloc(sizeof(bool) * d);
	int			dims[1] = {d};
	int			lbs[1] = {1};

	for (int j = 0; j < d; j++)
	{
		elems[j] = Float8GetDatum(x[j]);
		nulls[j] = !obs[j];
	}
	return construct_md_array(elems, nulls, 1, dims, lbs, FLOAT8OID, sizeof(double),
							  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
}
