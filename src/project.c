/*
 * project.c -- projection functions on plain float8[] arrays
 *
 * A set of k components is a k x d float8[] whose rows are orthonormal
 * (for example array_agg(pc ORDER BY component)).  With y = x - mean:
 *   scores          s = C y
 *   reconstruction  mean + C^T s
 *   residual        y - C^T s
 * The variance helpers read a perpca_stats value: the second moment S about
 * a centre c, S = M2/n + (mean - c)(mean - c)^T, its trace, the variance
 * captured by components tr(C S C^T), and the top eigenvectors of S after
 * deflating given global components (local components with U frozen).
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "linalg.h"
#include "perpca.h"
#include "stats.h"

PG_FUNCTION_INFO_V1(perpca_scores);
PG_FUNCTION_INFO_V1(perpca_reconstruct);
PG_FUNCTION_INFO_V1(perpca_residual);
PG_FUNCTION_INFO_V1(perpca_total_variance);
PG_FUNCTION_INFO_V1(perpca_explained_variance);
PG_FUNCTION_INFO_V1(perpca_local_pcs);

/* A row x, components C (k x d) and the centred copy y = x - mean. */
typedef struct Projection
{
	int			d;
	int			k;
	const double *C;
	const double *mean;			/* NULL: no centering */
	double	   *y;				/* d */
	double	   *s;				/* k */
} Projection;

/* Read (x, components[, mean]) from the call, check shapes, centre x, compute the scores. */
static void
projection_setup(FunctionCallInfo fcinfo, Projection *p)
{
	const double *x;
	int			cols;

	x = perpca_vector_arg(PG_GETARG_ARRAYTYPE_P(0), &p->d, "x");
	p->C = perpca_matrix_arg(PG_GETARG_ARRAYTYPE_P(1), &p->k, &cols, "components");
	if (cols != p->d)
		perpca_dim_mismatch(p->d, cols, "components");
	p->mean = NULL;
	if (PG_NARGS() > 2)
	{
		int			dm;

		p->mean = perpca_vector_arg(PG_GETARG_ARRAYTYPE_P(2), &dm, "mean");
		if (dm != p->d)
			perpca_dim_mismatch(p->d, dm, "mean");
	}
	p->y = palloc(sizeof(double) * p->d);
	for (int i = 0; i < p->d; i++)
		p->y[i] = p->mean ? x[i] - p->mean[i] : x[i];
	p->s = palloc(sizeof(double) * p->k);
	linalg_matvec(false, p->k, p->d, 1.0, p->C, p->y, 0.0, p->s);
}

/* Scores of x on the components: C (x - mean). */
Datum
perpca_scores(PG_FUNCTION_ARGS)
{
	Projection	p;

	projection_setup(fcinfo, &p);
	PG_RETURN_ARRAYTYPE_P(perpca_vector_build(p.s, p.k));
}

/* Reconstruction of x from its scores: mean + C^T C (x - mean). */
Datum
perpca_reconstruct(PG_FUNCTION_ARGS)
{
	Projection	p;
	double	   *out;

	projection_setup(fcinfo, &p);
	out = palloc(sizeof(double) * p.d);
	for (int i = 0; i < p.d; i++)
		out[i] = p.mean ? p.mean[i] : 0.0;
	linalg_matvec(true, p.k, p.d, 1.0, p.C, p.s, 1.0, out);
	PG_RETURN_ARRAYTYPE_P(perpca_vector_build(out, p.d));
}

/* Residual of x: (x - mean) - C^T C (x - mean). */
Datum
perpca_residual(PG_FUNCTION_ARGS)
{
	Projection	p;

	projection_setup(fcinfo, &p);
	linalg_matvec(true, p.k, p.d, -1.0, p.C, p.s, 1.0, p.y);
	PG_RETURN_ARRAYTYPE_P(perpca_vector_build(p.y, p.d));
}

/* ------------------------------------------------------------------------
 * Variance of a group (perpca_stats) about a centre
 * ------------------------------------------------------------------------
 */

/* The d x d second moment of argument 0 about the centre in argument argno (own mean if absent). */
static double *
stats_moment_arg(FunctionCallInfo fcinfo, int argno, int *dim)
{
	PerpcaStats *s = PG_GETARG_PERPCA_STATS(0);
	const double *center = NULL;
	double	   *S;

	perpca_stats_validate(s);
	if (s->n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("statistics of zero rows have no variance")));
	if (PG_NARGS() > argno)
	{
		int			dc;

		center = perpca_vector_arg(PG_GETARG_ARRAYTYPE_P(argno), &dc, "center");
		if (dc != s->dim)
			perpca_dim_mismatch(s->dim, dc, "center");
	}
	S = palloc(sizeof(double) * s->dim * s->dim);
	perpca_stats_moment(s, center, S);
	*dim = s->dim;
	return S;
}

/* Components argument argno, checked against dimension d. */
static const double *
components_arg(FunctionCallInfo fcinfo, int argno, int d, int *k, const char *what)
{
	int			cols;
	const double *C = perpca_matrix_arg(PG_GETARG_ARRAYTYPE_P(argno), k, &cols, what);

	if (cols != d)
		perpca_dim_mismatch(d, cols, what);
	return C;
}

/* tr(S) of a group about a centre (own mean by default): its total variance. */
Datum
perpca_total_variance(PG_FUNCTION_ARGS)
{
	int			d;
	double	   *S = stats_moment_arg(fcinfo, 1, &d);
	double		trace = 0.0;

	for (int i = 0; i < d; i++)
		trace += S[(int64) i * d + i];
	PG_RETURN_FLOAT8(trace);
}

/* tr(C S C^T): the variance of a group about a centre captured by the components C. */
Datum
perpca_explained_variance(PG_FUNCTION_ARGS)
{
	int			d;
	int			k;
	double	   *S = stats_moment_arg(fcinfo, 2, &d);
	const double *C = components_arg(fcinfo, 1, d, &k, "components");
	double	   *CS = palloc(sizeof(double) * k * d);
	double		sum = 0.0;

	linalg_gemm(false, false, k, d, d, 1.0, C, d, S, d, 0.0, CS, d);
	sum = linalg_dot((int64) k * d, CS, C);
	PG_RETURN_FLOAT8(sum);
}

/*
 * Local components of one group with the global components U frozen:
 * the top n_local eigenvectors of (I - U^T U) S (I - U^T U), U given as rows.
 */
Datum
perpca_local_pcs(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			d;
	int			r1;
	int			k = PG_GETARG_INT32(2);
	double	   *S = stats_moment_arg(fcinfo, 3, &d);
	const double *U = components_arg(fcinfo, 1, d, &r1, "global_pcs");
	double	   *D = palloc(sizeof(double) * d * d);
	double	   *T = palloc(sizeof(double) * d * d);
	double	   *values;
	double	   *Z;

	if (k < 1 || k > d - r1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("n_local must be between 1 and %d, not %d", d - r1, k),
				 errdetail("The local components live in the %d-dimensional complement of the %d global components.",
						   d - r1, r1)));

	/* D = I - U^T U; S <- D S D. */
	linalg_gemm(true, false, d, d, r1, -1.0, U, d, U, d, 0.0, D, d);
	for (int i = 0; i < d; i++)
		D[(int64) i * d + i] += 1.0;
	linalg_gemm(false, false, d, d, d, 1.0, D, d, S, d, 0.0, T, d);
	linalg_gemm(false, false, d, d, d, 1.0, T, d, D, d, 0.0, S, d);

	/* The eigenvectors come back as the columns of Z (d x k). */
	values = palloc(sizeof(double) * k);
	Z = palloc(sizeof(double) * d * k);
	if (linalg_eigh_top(d, S, k, values, Z, k, palloc(sizeof(double) * LINALG_EIGH_WORK(d, k))) != 0)
		elog(ERROR, "eigendecomposition of a %d x %d matrix failed", d, d);
	linalg_fix_signs(d, k, Z, k);

	InitMaterializedSRF(fcinfo, 0);
	for (int j = 0; j < k; j++)
	{
		Datum		row[3];
		bool		nulls[3] = {false, false, false};

		for (int i = 0; i < d; i++)
			T[i] = Z[(int64) i * k + j];
		row[0] = Int32GetDatum(j + 1);
		row[1] = PointerGetDatum(perpca_vector_build(T, d));
		row[2] = Float8GetDatum(values[j]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row, nulls);
	}
	return (Datum) 0;
}
