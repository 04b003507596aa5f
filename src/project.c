/*
 * project.c -- projection functions on plain float8[] arrays
 *
 * A set of k components is a k x d float8[] whose rows are orthonormal
 * (for example array_agg(pc ORDER BY component)).  With y = x - mean:
 *   scores          s = C y
 *   reconstruction  mean + C^T s
 *   residual        y - C^T s
 * The variance helpers read a perpca_stats value as one fit client
 * (client_math.h): the second moment S about a centre c, S = M2/n + (mean -
 * c)(mean - c)^T, its trace, the variance captured by components
 * tr(C S C^T), and the top eigenvectors of S after deflating given global
 * components (local components with U frozen) -- a thin group through its
 * rows, never as a d x d matrix.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "error_kinds.h"
#include "fit_input.h"
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

/*
 * The group of argument 0 as one fit client (fit_input.c): S about the center
 * in argument argno (its own mean if absent), thin or dense as the value is,
 * so these helpers never form the d x d matrix of a thin group.
 */
static void
stats_client_arg(FunctionCallInfo fcinfo, int argno, int r1, int r2, FitClient *c)
{
	PerpcaStats *s = PG_GETARG_PERPCA_STATS(0);
	const double *center = NULL;

	perpca_stats_validate(s);
	if (s->n == 0)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_BAD_VALUE),
				 errmsg("statistics of zero rows have no variance")));
	if (PG_NARGS() > argno)
	{
		int			dc;

		center = perpca_vector_arg(PG_GETARG_ARRAYTYPE_P(argno), &dc, "center");
		if (dc != s->dim)
			perpca_dim_mismatch(s->dim, dc, "center");
	}
	clients_one(s, center, r1, r2, c);
}

/* The dimension of the statistics in argument 0. */
static int
stats_dim_arg(FunctionCallInfo fcinfo)
{
	PerpcaStats *s = PG_GETARG_PERPCA_STATS(0);

	perpca_stats_validate(s);
	return s->dim;
}

/* The k x d rows C as a d x k matrix of columns. */
static double *
columns_of(const double *C, int k, int d)
{
	double	   *T = palloc(sizeof(double) * d * Max(k, 1));

	for (int j = 0; j < k; j++)
		linalg_copy(d, 1, C + (int64) j * d, 1, T + j, k);
	return T;
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
	FitClient	c;

	stats_client_arg(fcinfo, 1, 0, 0, &c);
	PG_RETURN_FLOAT8(client_trace(&c));
}

/* tr(C S C^T): the variance of a group about a centre captured by the components C. */
Datum
perpca_explained_variance(PG_FUNCTION_ARGS)
{
	int			d = stats_dim_arg(fcinfo);
	int			k;
	const double *C = components_arg(fcinfo, 1, d, &k, "components");
	double	   *Ct = columns_of(C, k, d);
	double	   *SCt = palloc(sizeof(double) * d * Max(k, 1));
	FitClient	c;

	stats_client_arg(fcinfo, 2, 0, 0, &c);
	client_apply(&c, Ct, k, SCt);
	PG_RETURN_FLOAT8(linalg_dot((int64) d * k, Ct, SCt));
}

/*
 * Local components of one group with the global components U frozen:
 * the top n_local eigenvectors of (I - U^T U) S (I - U^T U), U given as rows.
 */
Datum
perpca_local_pcs(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			d = stats_dim_arg(fcinfo);
	int			r1;
	int			k = PG_GETARG_INT32(2);
	const double *U = components_arg(fcinfo, 1, d, &r1, "global_pcs");
	double	   *T = palloc(sizeof(double) * d);
	double	   *values;
	double	   *Z;
	FitClient	c;

	if (k < 1 || k > d - r1)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("n_local must be between 1 and %d, not %d", d - r1, k),
				 errdetail("The local components live in the %d-dimensional complement of the %d global components.",
						   d - r1, r1)));
	stats_client_arg(fcinfo, 3, r1, k, &c);
	values = palloc(sizeof(double) * k);
	Z = palloc(sizeof(double) * d * k);
	client_top_eigen(&c, r1 > 0 ? columns_of(U, r1, d) : NULL, k, values, Z, k);
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
