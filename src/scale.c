/*
 * scale.c -- feature scaling from statistics (see scale.h)
 *
 * The fit scales its clients' statistics here before anything else reads
 * them (fit_input.c); the stored-model functions in SQL scale held-out
 * statistics and centres with the divisors the model stored:
 *   perpca_scale_factors(s)                  the divisors of one (merged) value
 *   perpca_internal.scale_stats(s, f)        statistics of the rows D^-1 x
 *   perpca_internal.scale_vector(x, f)       D^-1 x
 * (D = diag(f), f the scale_factors); a NULL f means unscaled: both internal functions return their input.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "access/htup_details.h"
#include "lib/stringinfo.h"
#include "utils/array.h"

#include "error_kinds.h"
#include "perpca.h"
#include "scale.h"

PG_FUNCTION_INFO_V1(perpca_scale_factors);
PG_FUNCTION_INFO_V1(perpca_scale_stats);
PG_FUNCTION_INFO_V1(perpca_scale_vector);

/*
 * A sketch cannot be scaled: its columns' variances (M2's diagonal) are not
 * kept, only their sum, and B's bound would not survive unequal scales.
 */
static void
refuse_sketch(const PerpcaStats *s)
{
	if (s->form == PERPCA_FORM_SKETCH)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_UNSUPPORTED),
				 errmsg("sketched statistics cannot be scaled"),
				 errdetail("A sketch keeps the total variance, not each column's."),
				 errhint("Scale the rows before sketching them (perpca_sketch(x / s, ell)), or use exact statistics (perpca_stats).")));
}

/*
 * M2_jj of one value: the packed diagonal (dense) or the column's sum of
 * squares of its centred rows Y (thin: perpca_stats_thin_rows).
 */
static double
comoment_diagonal(const PerpcaStats *s, const double *Y, int j)
{
	const double *body = PERPCA_STATS_BODY(s);
	int			d = s->dim;
	double		sum = 0.0;

	refuse_sketch(s);
	if (s->form != PERPCA_FORM_THIN)
		return body[(int64) j * d - (int64) j * (j - 1) / 2];
	for (int64 r = 0; r < s->n; r++)
		sum += Y[r * d + j] * Y[r * d + j];
	return sum;
}

void
scale_pooled_sums(PerpcaStats *const *stats, int n, int d, const double *mean, double *sums)
{
	double	   *delta = palloc(sizeof(double) * Max(d, 1));

	for (int i = 0; i < n; i++)
	{
		const double *Y = perpca_stats_thin_rows(stats[i]);

		perpca_stats_offset(stats[i], mean, delta);
		for (int j = 0; j < d; j++)
			sums[j] += comoment_diagonal(stats[i], Y, j) + (double) stats[i]->n * delta[j] * delta[j];
		if (Y != NULL && Y != PERPCA_STATS_BODY(stats[i]))
			pfree((void *) Y);
	}
	pfree(delta);
}

int
scale_finish(const double *sums, const double *mean, double rows, int d, double *scale,
			 bool *constant)
{
	int			nconstant = 0;

	for (int j = 0; j < d; j++)
	{
		double		sd = sqrt(sums[j] / rows);
		bool		flat = !(sd > SCALE_CONSTANT_RELATIVE * sqrt(mean[j] * mean[j] + sd * sd));

		scale[j] = flat ? 1.0 : sd;
		nconstant += flat;
		if (constant)
			constant[j] = flat;
	}
	return nconstant;
}

int
scale_factors(PerpcaStats *const *stats, int n, int d, double *scale, bool *constant)
{
	double	   *mean = palloc0(sizeof(double) * Max(d, 1));
	double	   *sums = palloc0(sizeof(double) * Max(d, 1));
	double		rows = 0.0;
	int			nconstant;

	for (int i = 0; i < n; i++)
	{
		rows += (double) stats[i]->n;
		for (int j = 0; j < d; j++)
			mean[j] += (double) stats[i]->n *
				(PERPCA_STATS_MEAN(stats[i])[j] + PERPCA_STATS_MEAN_LO(stats[i])[j]);
	}
	for (int j = 0; j < d; j++)
		mean[j] /= rows;
	scale_pooled_sums(stats, n, d, mean, sums);
	nconstant = scale_finish(sums, mean, rows, d, scale, constant);
	pfree(mean);
	pfree(sums);
	return nconstant;
}

/* hi + lo = (mean + mean_lo) / s as a double-double (the rounding error of hi kept in lo). */
static void
scale_mean(double *hi, double *lo, double s)
{
	double		q = *hi / s;
	double		err = fma(-q, s, *hi);	/* mean - q s, exactly */

	*lo = (err + *lo) / s;
	*hi = q;
}

void
scale_stats_inplace(PerpcaStats *s, const double *scale)
{
	int			d = s->dim;
	double	   *body = PERPCA_STATS_BODY(s);

	refuse_sketch(s);
	if (perpca_stats_float4(s))
		elog(ERROR, "float4 thin statistics are scaled widened (perpca_stats_detoast_copy)");
	for (int j = 0; j < d; j++)
		scale_mean(&PERPCA_STATS_MEAN(s)[j], &PERPCA_STATS_MEAN_LO(s)[j], scale[j]);
	if (s->form == PERPCA_FORM_THIN)
	{
		for (int64 r = 0; r < s->n; r++)
			for (int j = 0; j < d; j++)
				body[r * d + j] /= scale[j];
		return;
	}
	for (int64 i = 0, k = 0; i < d; i++)
		for (int64 j = i; j < d; j++)
			body[k++] /= scale[i] * scale[j];
}

void
scale_report_constant(const bool *constant, int d)
{
	StringInfoData list;
	int			count = 0;

	initStringInfo(&list);
	for (int j = 0; j < d; j++)
		if (constant[j])
		{
			if (count < 20)
				appendStringInfo(&list, "%s%d", count ? ", " : "", j + 1);
			count++;
		}
	if (count == 0)
		return;
	if (count > 20)
		appendStringInfo(&list, ", ... (%d in all)", count);
	ereport(NOTICE,
			(errmsg("scale 'standard': %d feature%s with zero variance left unscaled: %s",
					count, count == 1 ? "" : "s", list.data),
			 errdetail("A feature whose standard deviation is at most %g times its root mean square keeps divisor 1.",
					   SCALE_CONSTANT_RELATIVE),
			 errhint("A stored model lists them in <model>_info.constant_features (1-based).")));
}

/* A scale_factors argument of length d: positive finite divisors. */
static double *
scale_arg(ArrayType *a, int d)
{
	int			n;
	double	   *s = perpca_vector_arg(a, &n, "scale_factors");

	if (n != d)
		perpca_dim_mismatch(d, n, "scale_factors");
	for (int j = 0; j < d; j++)
		if (!(s[j] > 0.0))
			ereport(ERROR,
					(errcode(PERPCA_ERRCODE_ARGUMENT),
					 errmsg("scale_factors must hold positive divisors, element %d is %g", j + 1, s[j])));
	return s;
}

/* The divisors as float8[] and the 1-based constant features as int[]. */
void
scale_arrays(const double *scale, const bool *constant, int d, Datum *factors, Datum *constant_features)
{
	Datum	   *flat = palloc(sizeof(Datum) * Max(d, 1));
	int			nflat = 0;

	for (int j = 0; j < d; j++)
		if (constant[j])
			flat[nflat++] = Int32GetDatum(j + 1);
	*factors = PointerGetDatum(perpca_vector_build(scale, d));
	*constant_features = PointerGetDatum(construct_array(flat, nflat, INT4OID, sizeof(int32), true, TYPALIGN_INT));
}

Datum
scale_record(FunctionCallInfo fcinfo, const double *scale, const bool *constant, int d)
{
	TupleDesc	desc;
	Datum		values[2] = {0, 0};
	bool		nulls[2] = {scale == NULL, scale == NULL};

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "a record of scale_factors and constant_features was expected");
	desc = BlessTupleDesc(desc);
	if (scale != NULL)
		scale_arrays(scale, constant, d, &values[0], &values[1]);
	return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
}

/* perpca_scale_factors(s perpca_stats, OUT scale_factors float8[], OUT constant_features int[]) */
Datum
perpca_scale_factors(PG_FUNCTION_ARGS)
{
	PerpcaStats *s = PG_GETARG_PERPCA_STATS(0);
	int			d = s->dim;
	double	   *scale = palloc(sizeof(double) * Max(d, 1));
	bool	   *constant = palloc(sizeof(bool) * Max(d, 1));

	perpca_stats_validate(s);
	if (s->n <= 0)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_BAD_VALUE),
				 errmsg("perpca_scale_factors needs statistics of at least one row")));
	scale_factors(&s, 1, d, scale, constant);
	PG_RETURN_DATUM(scale_record(fcinfo, scale, constant, d));
}

/* perpca_internal.scale_stats(s, scale): the statistics of the rows D^-1 x (NULL scale: s). */
Datum
perpca_scale_stats(PG_FUNCTION_ARGS)
{
	PerpcaStats *s;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	if (PG_ARGISNULL(1))
		PG_RETURN_DATUM(PG_GETARG_DATUM(0));
	s = perpca_stats_detoast_copy(PG_GETARG_DATUM(0));
	perpca_stats_validate(s);
	scale_stats_inplace(s, scale_arg(PG_GETARG_ARRAYTYPE_P(1), s->dim));
	/* what input would refuse is an error here, never a value */
	if (perpca_first_nonfinite(s->data, (int) Min(perpca_stats_value_count(s), INT_MAX)) >= 0)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_OUT_OF_RANGE),
				 errmsg("scaled statistics are out of the range of float8"),
				 errhint("Scale factors this small cannot scale these statistics.")));
	PG_RETURN_POINTER(s);
}

/* perpca_internal.scale_vector(x, scale): D^-1 x (NULL scale: x). */
Datum
perpca_scale_vector(PG_FUNCTION_ARGS)
{
	int			d;
	double	   *x,
			   *s;
	double	   *out;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	if (PG_ARGISNULL(1))
		PG_RETURN_DATUM(PG_GETARG_DATUM(0));
	x = perpca_vector_arg(PG_GETARG_ARRAYTYPE_P(0), &d, "x");
	s = scale_arg(PG_GETARG_ARRAYTYPE_P(1), d);
	out = palloc(sizeof(double) * Max(d, 1));
	for (int j = 0; j < d; j++)
		out[j] = x[j] / s[j];
	PG_RETURN_ARRAYTYPE_P(perpca_vector_build(out, d));
}
