/*
 * pgvector_io.c -- perpca_vector: pgvector's vector and halfvec values read and
 * written in place
 *
 * The companion extension perpca_vector (sql/perpca_vector--*.sql, requires
 * perpca and vector) declares these functions from perpca's own module, so
 * perpca builds and loads without pgvector.  pgvector's on-disk layout is
 * declared here again -- a varlena header, int16 dim, int16 unused (zero),
 * then dim float4 (vector) or IEEE binary16 (halfvec) values -- and checked
 * (size, dim, unused) before a value is trusted.  No run-time name lookup is
 * needed: the SQL signatures fix the types when the script runs.
 *
 * In: perpca_stats(vector) and perpca_stats(halfvec), with or without nulls,
 * are stats_agg.c's transition for rows of these types, whose readers this
 * file puts in the aggregate's table when the library loads (stats.h;
 * stats_agg.c never calls this file by name): a row is
 * converted into a buffer of doubles kept in the state and added as a
 * float8[] row is, or, in a thin group, waits in TOAST as its pointer as a
 * float8[] row does, and is converted when fetched.  So they give the bits
 * perpca_stats(float8[]) gives for v::real[]::float8[] (float4 and binary16
 * values are doubles exactly); combine, serialize and final are
 * perpca_stats(float8[])'s.
 *
 * Out: the model row functions (perpca_model_scores, ...) on a vector row
 * run model_functions.c's perpca_model_row() and return a vector: each double result
 * rounded to float4, as the cast float8[]::vector rounds it.
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "fmgr.h"

#include "error_kinds.h"
#include "perpca.h"
#include "stats.h"

/* pgvector's vector: float4 values. */
typedef struct PgVector
{
	int32		vl_len_;		/* varlena header (do not touch directly) */
	int16		dim;
	int16		unused;			/* zero */
	float		x[FLEXIBLE_ARRAY_MEMBER];
} PgVector;

/* pgvector's halfvec: IEEE 754 binary16 values. */
typedef struct PgHalfVector
{
	int32		vl_len_;		/* varlena header (do not touch directly) */
	int16		dim;
	int16		unused;			/* zero */
	uint16		x[FLEXIBLE_ARRAY_MEMBER];
} PgHalfVector;

PG_FUNCTION_INFO_V1(perpca_vector_stats_accum);
PG_FUNCTION_INFO_V1(perpca_halfvec_stats_accum);
PG_FUNCTION_INFO_V1(perpca_vector_stats_accum_nulls);
PG_FUNCTION_INFO_V1(perpca_halfvec_stats_accum_nulls);
PG_FUNCTION_INFO_V1(perpca_model_scores_vector);
PG_FUNCTION_INFO_V1(perpca_model_global_part_vector);
PG_FUNCTION_INFO_V1(perpca_model_local_part_vector);
PG_FUNCTION_INFO_V1(perpca_model_reconstruct_vector);
PG_FUNCTION_INFO_V1(perpca_model_residual_vector);
PG_FUNCTION_INFO_V1(perpca_model_error_vector);

/* Argument of the model row functions that holds the row (model, client, x[, unknown]). */
#define ARG_X 2

/*
 * Check a detoasted value against its size: a header (varlena header, int16
 * dim, int16 unused, as both types have it) of `header` bytes, then dim >= 1
 * values of elemsize bytes each; unused zero; dim within perpca's limit.
 */
static void
check_layout(const PgVector *p, Size header, Size elemsize, const char *type,
			 const char *what)
{
	if (VARSIZE(p) < header)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_VECTOR_CORRUPTED),
				 errmsg("%s is not a valid %s value", what, type),
				 errdetail("It has %u bytes, fewer than a header.", (unsigned) VARSIZE(p))));
	if (p->dim < 1 || p->unused != 0 || VARSIZE(p) != header + elemsize * (Size) p->dim)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_VECTOR_CORRUPTED),
				 errmsg("%s is not a valid %s value", what, type),
				 errdetail("Its header says %d dimensions (unused field %d) in %u bytes.",
						   p->dim, p->unused, (unsigned) VARSIZE(p))));
	perpca_check_dim_limit(p->dim);
}

/* A vector argument, detoasted and checked. */
static const PgVector *
vector_arg(Datum arg, const char *what)
{
	const PgVector *v = (const PgVector *) PG_DETOAST_DATUM(arg);

	check_layout(v, offsetof(PgVector, x), sizeof(float), "vector", what);
	return v;
}

/* A halfvec argument, detoasted and checked (its header is a vector's). */
static const PgHalfVector *
halfvec_arg(Datum arg, const char *what)
{
	const PgHalfVector *v = (const PgHalfVector *) PG_DETOAST_DATUM(arg);

	StaticAssertStmt(offsetof(PgHalfVector, dim) == offsetof(PgVector, dim) &&
					 offsetof(PgHalfVector, unused) == offsetof(PgVector, unused),
					 "vector and halfvec headers differ");
	check_layout((const PgVector *) v, offsetof(PgHalfVector, x), sizeof(uint16), "halfvec", what);
	return v;
}

/*
 * float4 values as doubles (exact), and whether all are finite, in one
 * branch-free pass (vectorizable).
 */
static inline bool
float_to_double(int n, const float *restrict src, double *restrict dst)
{
	int			bad = 0;		/* int: a bool keeps GCC from vectorizing */

	for (int j = 0; j < n; j++)
	{
		dst[j] = src[j];
		bad |= !(fabsf(src[j]) <= FLT_MAX);
	}
	return !bad;
}

/*
 * One binary16 value as a double, exactly: sign, 5 exponent bits (bias 15),
 * 10 fraction bits; a normal number's bits move into a double's (bias 1023,
 * 52 fraction bits).  Exponent 31 is infinity or NaN (which the statistics
 * reject as they reject them in a float8[] row).
 */
static inline double
half_to_double(uint16 h)
{
	uint64		exponent = (h >> 10) & 0x1f;
	uint64		fraction = h & 0x3ff;
	uint64		bits;
	double		v;

	if (exponent == 0)
		v = (double) fraction * 0x1p-24;	/* zero or subnormal */
	else if (exponent == 31)
		v = fraction == 0 ? INFINITY : NAN;
	else
	{
		bits = ((exponent - 15 + 1023) << 52) | (fraction << 42);
		memcpy(&v, &bits, sizeof(v));
	}
	return (h & 0x8000) ? -v : v;
}

/* binary16 values as doubles, and whether all are finite (exponent < 31). */
static bool
half_to_doubles(int n, const uint16 *src, double *dst)
{
	int			bad = 0;

	for (int j = 0; j < n; j++)
	{
		dst[j] = half_to_double(src[j]);
		bad |= (src[j] & 0x7c00) == 0x7c00;
	}
	return !bad;
}

/* ------------------------------------------------------------------------
 * In: perpca_stats(vector), perpca_stats(halfvec), with or without nulls:
 * the readers stats_agg.c calls through its table (stats.h)
 * ------------------------------------------------------------------------
 */

static const void *
vector_row(Datum row, int *d, const char *what)
{
	const PgVector *v = vector_arg(row, what);

	*d = v->dim;
	return v;
}

static bool
vector_values(const void *row, double *out)
{
	return float_to_double(((const PgVector *) row)->dim, ((const PgVector *) row)->x, out);
}

static Size
vector_size(int d)
{
	return offsetof(PgVector, x) + sizeof(float) * (Size) d;
}

static const void *
halfvec_row(Datum row, int *d, const char *what)
{
	const PgHalfVector *v = halfvec_arg(row, what);

	*d = v->dim;
	return v;
}

static bool
halfvec_values(const void *row, double *out)
{
	return half_to_doubles(((const PgHalfVector *) row)->dim, ((const PgHalfVector *) row)->x, out);
}

static Size
halfvec_size(int d)
{
	return offsetof(PgHalfVector, x) + sizeof(uint16) * (Size) d;
}

static const PerpcaRowReader vector_reader = {vector_row, vector_values, vector_size};
static const PerpcaRowReader halfvec_reader = {halfvec_row, halfvec_values, halfvec_size};

void
perpca_pgvector_init(void)
{
	perpca_stats_row_reader(PERPCA_ROWTYPE_VECTOR, &vector_reader);
	perpca_stats_row_reader(PERPCA_ROWTYPE_HALFVEC, &halfvec_reader);
}

/*
 * perpca_stats(vector / halfvec [, nulls]) transitions: a row with a NaN or
 * infinite value (which pgvector itself never makes) is an error or, under
 * 'skip', left out and counted.
 */
PERPCA_STATS_ACCUM_FUNCTION(perpca_vector_stats_accum, PERPCA_ROWTYPE_VECTOR, PERPCA_NULLS_ERROR)
PERPCA_STATS_ACCUM_FUNCTION(perpca_halfvec_stats_accum, PERPCA_ROWTYPE_HALFVEC, PERPCA_NULLS_ERROR)
PERPCA_STATS_ACCUM_FUNCTION(perpca_vector_stats_accum_nulls, PERPCA_ROWTYPE_VECTOR, perpca_nulls_fcinfo_arg(fcinfo, 2))
PERPCA_STATS_ACCUM_FUNCTION(perpca_halfvec_stats_accum_nulls, PERPCA_ROWTYPE_HALFVEC, perpca_nulls_fcinfo_arg(fcinfo, 2))

/* ------------------------------------------------------------------------
 * Out: the model row functions on a vector row
 * ------------------------------------------------------------------------
 */

/* A vector of n values, each double rounded to float4 (overflow is an error). */
static PgVector *
vector_build(const double *x, int n, const char *what)
{
	Size		size = offsetof(PgVector, x) + sizeof(float) * (Size) n;
	PgVector   *v;

	if (n < 1)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_BAD_VALUE),
				 errmsg("%s has no values, and a vector needs at least one", what),
				 errhint("The model has no global components and the client none of its own; the float8[] form returns an empty array.")));
	v = palloc(size);
	SET_VARSIZE(v, size);
	v->dim = n;
	v->unused = 0;
	for (int j = 0; j < n; j++)
	{
		v->x[j] = (float) x[j];
		if (isinf(v->x[j]))
			ereport(ERROR,
					(errcode(PERPCA_ERRCODE_OUT_OF_RANGE),
					 errmsg("%s is out of range for type vector", what),
					 errdetail("Value %d, %g, does not fit in a float4.", j + 1, x[j])));
	}
	return v;
}

/* The row x of a model row function: the vector argument as d finite doubles. */
static const double *
model_row_x(FunctionCallInfo fcinfo, int *d)
{
	const PgVector *v = vector_arg(PG_GETARG_DATUM(ARG_X), "x");
	double	   *x = palloc(sizeof(double) * v->dim);
	int			j;

	if (!float_to_double(v->dim, v->x, x) && (j = perpca_first_nonfinite(x, v->dim)) >= 0)
		perpca_row_element_error("x", j, v->dim, false, x[j],
								 "A vector made by pgvector holds no NaN or infinite values.");
	*d = v->dim;
	return x;
}

/* A row function on a vector row: its result as a vector. */
static Datum
model_row_vector(FunctionCallInfo fcinfo, PerpcaRowOp op, const char *what)
{
	int			d,
				n;
	const double *x = model_row_x(fcinfo, &d);
	const double *out = perpca_model_row(fcinfo, op, x, d, &n);

	PG_RETURN_POINTER(vector_build(out, n, what));
}

/* The model's row functions on a vector row, each its result as a vector. */
#define ROW_VECTOR_FUNCTION(name, op, what) \
Datum name(PG_FUNCTION_ARGS) { return model_row_vector(fcinfo, op, what); }

ROW_VECTOR_FUNCTION(perpca_model_scores_vector, PERPCA_ROW_SCORES, "the scores")
ROW_VECTOR_FUNCTION(perpca_model_global_part_vector, PERPCA_ROW_GLOBAL_PART, "the global part")
ROW_VECTOR_FUNCTION(perpca_model_local_part_vector, PERPCA_ROW_LOCAL_PART, "the local part")
ROW_VECTOR_FUNCTION(perpca_model_reconstruct_vector, PERPCA_ROW_RECONSTRUCT, "the reconstruction")
ROW_VECTOR_FUNCTION(perpca_model_residual_vector, PERPCA_ROW_RESIDUAL, "the residual")

/* perpca_model_error on a vector row: a float8, as for a float8[] row. */
Datum
perpca_model_error_vector(PG_FUNCTION_ARGS)
{
	int			d,
				n;
	const double *x = model_row_x(fcinfo, &d);

	PG_RETURN_FLOAT8(perpca_model_row(fcinfo, PERPCA_ROW_ERROR, x, d, &n)[0]);
}
