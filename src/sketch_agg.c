/*
 * sketch_agg.c -- the aggregates perpca_sketch(x, ell) and perpca_sketch(x,
 * ell, nulls) over float8[] rows, and the transitions of perpca_vector's
 * perpca_sketch(vector / halfvec, ell[, nulls]): Frequent Directions
 * (sketch.c) over the group's centred rows, returning a perpca_stats sketch
 *
 * Rows of vector and halfvec are read through stats_agg.c's table of row
 * readers (filled by pgvector_io.c when the library loads), so this file
 * never calls pgvector_io.c.  A NULL row is ignored; a row with a NULL, NaN
 * or infinite element is an error naming it, or with nulls 'skip' left out
 * and counted, as in perpca_stats(x, nulls).
 *
 * The serialized state (parallel plans, partition-wise aggregation) is the
 * sketch state exactly (its buffer of up to 2 ell rows), so partial
 * aggregation loses nothing beyond what FD itself does; FD depends on the
 * order of the rows, so a parallel plan's sketch differs from the serial
 * plan's, within the same guarantee.
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/array.h"

#include "error_kinds.h"
#include "perpca.h"
#include "sketch.h"
#include "stats.h"

PG_FUNCTION_INFO_V1(perpca_sketch_accum);
PG_FUNCTION_INFO_V1(perpca_sketch_accum_nulls);
PG_FUNCTION_INFO_V1(perpca_vector_sketch_accum);
PG_FUNCTION_INFO_V1(perpca_vector_sketch_accum_nulls);
PG_FUNCTION_INFO_V1(perpca_halfvec_sketch_accum);
PG_FUNCTION_INFO_V1(perpca_halfvec_sketch_accum_nulls);
PG_FUNCTION_INFO_V1(perpca_sketch_combine);
PG_FUNCTION_INFO_V1(perpca_sketch_serialize);
PG_FUNCTION_INFO_V1(perpca_sketch_deserialize);
PG_FUNCTION_INFO_V1(perpca_sketch_final);

#define SKETCH_SKIP_HINT "Use perpca_sketch(x, ell, 'skip') to leave out rows with a NULL, NaN or infinite element and count them (perpca_skipped)."

/* The aggregate's state: the sketch, what a missing value does, a row buffer. */
typedef struct SketchAgg
{
	SketchState *sk;
	PerpcaNulls nulls;
	double	   *scratch;		/* d: a row of another type as doubles */
} SketchAgg;

static SketchAgg *
agg_create(MemoryContext cxt, int d, int ell, PerpcaNulls nulls)
{
	SketchAgg  *agg = MemoryContextAllocZero(cxt, sizeof(SketchAgg));

	agg->sk = sketch_create(cxt, d, ell);
	agg->nulls = nulls;
	return agg;
}

/* The ell argument (argument 2): not NULL, checked against d. */
static int
ell_arg(FunctionCallInfo fcinfo, int d)
{
	int			ell;

	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NULL),
				 errmsg("ell must not be NULL")));
	ell = PG_GETARG_INT32(2);
	sketch_check_ell(ell, d);
	return ell;
}

/*
 * The state for a row of dimension d: created on the first row, checked on
 * the others (the same d, ell and nulls for every row of a group).
 */
static SketchAgg *
agg_state(FunctionCallInfo fcinfo, int d, PerpcaNulls nulls)
{
	MemoryContext aggcxt = perpca_agg_context(fcinfo, "perpca_sketch_accum", NULL);
	SketchAgg  *agg = PG_ARGISNULL(0) ? NULL : (SketchAgg *) PG_GETARG_POINTER(0);
	int			ell = ell_arg(fcinfo, d);

	if (agg == NULL)
		return agg_create(aggcxt, d, ell, nulls);
	if (d != agg->sk->d)
		perpca_dim_mismatch(agg->sk->d, d, "input row");
	if (ell != agg->sk->ell)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("ell must be the same for every row of a group (%d, then %d)",
						agg->sk->ell, ell)));
	if (nulls != agg->nulls)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("missing must be the same for every row of a group")));
	return agg;
}

/* Add the row x (d doubles): a non-finite value is an error or skips the row. */
static void
agg_add(SketchAgg *agg, const double *x)
{
	int			j = perpca_first_nonfinite(x, agg->sk->d);

	if (j < 0)
		sketch_add_row(agg->sk, x);
	else if (agg->nulls == PERPCA_NULLS_ERROR)
		perpca_row_element_error("input row", j, agg->sk->d, false, x[j], SKETCH_SKIP_HINT);
	else
		agg->sk->skipped++;
}

/* The state with a float8[] row (argument 1) added. */
static SketchAgg *
accum_float8(FunctionCallInfo fcinfo, PerpcaNulls nulls)
{
	ArrayType  *a = PG_GETARG_ARRAYTYPE_P(1);
	int			d;
	int			j;
	const double *x = perpca_vector_shape_nulls(a, &d, "input row");
	SketchAgg  *agg = agg_state(fcinfo, d, nulls);

	if (ARR_HASNULL(a) && (j = perpca_first_null(a)) >= 0)
	{
		if (nulls == PERPCA_NULLS_ERROR)
			perpca_row_element_error("input row", j, d, true, 0.0, SKETCH_SKIP_HINT);
		agg->sk->skipped++;
	}
	else
		agg_add(agg, x);
	return agg;
}

/* The state with a row of another type (argument 1) added, read through its reader. */
static SketchAgg *
accum_rowtype(FunctionCallInfo fcinfo, PerpcaRowType type, PerpcaNulls nulls)
{
	const PerpcaRowReader *reader = perpca_stats_row_reader_get(type);
	int			d;
	const void *row = reader->row(PG_GETARG_DATUM(1), &d, "input row");
	SketchAgg  *agg = agg_state(fcinfo, d, nulls);

	if (agg->scratch == NULL)
		agg->scratch = MemoryContextAlloc(agg->sk->cxt, sizeof(double) * d);
	(void) reader->values(row, agg->scratch);	/* agg_add checks */
	agg_add(agg, agg->scratch);
	return agg;
}

/* The transition for a row of any type: a NULL row leaves the state as it is. */
static Datum
accum(FunctionCallInfo fcinfo, PerpcaRowType type, PerpcaNulls nulls)
{
	if (PG_ARGISNULL(1))
	{
		perpca_agg_context(fcinfo, "perpca_sketch_accum", NULL);
		if (PG_ARGISNULL(0))
			PG_RETURN_NULL();
		PG_RETURN_POINTER(PG_GETARG_POINTER(0));
	}
	if (type == PERPCA_ROWTYPE_FLOAT8)
		PG_RETURN_POINTER(accum_float8(fcinfo, nulls));
	PG_RETURN_POINTER(accum_rowtype(fcinfo, type, nulls));
}

/* perpca_sketch(x, ell) and perpca_sketch(x, ell, nulls) of float8[], vector and halfvec rows. */
#define SKETCH_ACCUM(name, type, nulls) \
Datum name(PG_FUNCTION_ARGS) { return accum(fcinfo, type, nulls); }

SKETCH_ACCUM(perpca_sketch_accum, PERPCA_ROWTYPE_FLOAT8, PERPCA_NULLS_ERROR)
SKETCH_ACCUM(perpca_sketch_accum_nulls, PERPCA_ROWTYPE_FLOAT8, perpca_nulls_fcinfo_arg(fcinfo, 3))
SKETCH_ACCUM(perpca_vector_sketch_accum, PERPCA_ROWTYPE_VECTOR, PERPCA_NULLS_ERROR)
SKETCH_ACCUM(perpca_vector_sketch_accum_nulls, PERPCA_ROWTYPE_VECTOR, perpca_nulls_fcinfo_arg(fcinfo, 3))
SKETCH_ACCUM(perpca_halfvec_sketch_accum, PERPCA_ROWTYPE_HALFVEC, PERPCA_NULLS_ERROR)
SKETCH_ACCUM(perpca_halfvec_sketch_accum_nulls, PERPCA_ROWTYPE_HALFVEC, perpca_nulls_fcinfo_arg(fcinfo, 3))

/* Merge partial state b into a (a created as an empty copy in our context). */
Datum
perpca_sketch_combine(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = perpca_agg_context(fcinfo, "perpca_sketch_combine", NULL);
	SketchAgg  *a = PG_ARGISNULL(0) ? NULL : (SketchAgg *) PG_GETARG_POINTER(0);
	SketchAgg  *b = PG_ARGISNULL(1) ? NULL : (SketchAgg *) PG_GETARG_POINTER(1);

	if (b == NULL)
	{
		if (a == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(a);
	}
	if (a == NULL)
		a = agg_create(aggcxt, b->sk->d, b->sk->ell, b->nulls);
	sketch_merge(a->sk, b->sk);
	PG_RETURN_POINTER(a);
}

Datum
perpca_sketch_serialize(PG_FUNCTION_ARGS)
{
	perpca_agg_context(fcinfo, "perpca_sketch_serialize", NULL);
	PG_RETURN_BYTEA_P(sketch_serialize(((SketchAgg *) PG_GETARG_POINTER(0))->sk));
}

/* In the current (per-input-tuple) context: the combine function copies what it keeps. */
Datum
perpca_sketch_deserialize(PG_FUNCTION_ARGS)
{
	SketchAgg  *agg;

	perpca_agg_context(fcinfo, "perpca_sketch_deserialize", NULL);
	agg = palloc0(sizeof(SketchAgg));
	agg->sk = sketch_deserialize(CurrentMemoryContext, PG_GETARG_BYTEA_P(0));
	agg->nulls = PERPCA_NULLS_ERROR;	/* its rows were checked where they were read */
	PG_RETURN_POINTER(agg);
}

Datum
perpca_sketch_final(PG_FUNCTION_ARGS)
{
	perpca_agg_context(fcinfo, "perpca_sketch_final", NULL);
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	PG_RETURN_POINTER(sketch_to_stats(((SketchAgg *) PG_GETARG_POINTER(0))->sk));
}
