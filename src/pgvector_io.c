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
 * In: the readers of vector and halfvec rows, which this file puts in the
 * aggregates' table when the library loads (stats.h; stats_agg.c never
 * calls this file by name).  A row is converted into doubles (float4 and
 * binary16 values are doubles exactly), so perpca_stats(v) gives the bits
 * of perpca_stats(v::real[]::float8[]); a thin group keeps its rows as
 * float4 (binary16 values are float4 exactly too), and their centred
 * doubles are that path's bits.
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

/* pgvector's vector (float4 values) and halfvec (IEEE 754 binary16 values in x's place). */
typedef struct PgVector
{
	int32		vl_len_;		/* varlena header (do not touch directly) */
	int16		dim;
	int16		unused;			/* zero */
	float		x[FLEXIBLE_ARRAY_MEMBER];
} PgVector;

#define PGVECTOR_HEADER offsetof(PgVector, x)

PG_FUNCTION_INFO_V1(perpca_model_scores_vector);
PG_FUNCTION_INFO_V1(perpca_model_global_part_vector);
PG_FUNCTION_INFO_V1(perpca_model_local_part_vector);
PG_FUNCTION_INFO_V1(perpca_model_reconstruct_vector);
PG_FUNCTION_INFO_V1(perpca_model_residual_vector);
PG_FUNCTION_INFO_V1(perpca_model_error_vector);

/* Argument of the model row functions that holds the row (model, client, x[, unknown]). */
#define ARG_X 2

/*
 * A vector (elemsize 4) or halfvec (2) argument, detoasted and checked
 * against its size: a header (varlena header, int16 dim, int16 unused),
 * then dim >= 1 values of elemsize bytes each; unused zero; dim within
 * perpca's limit.  Its dimension in *d.
 */
static const PgVector *
pgvector_arg(Datum arg, Size elemsize, int *d, const char *what)
{
	const PgVector *p = (const PgVector *) PG_DETOAST_DATUM(arg);
	const char *type = elemsize == sizeof(float) ? "vector" : "halfvec";

	if (VARSIZE(p) < PGVECTOR_HEADER)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_VECTOR_CORRUPTED),
				 errmsg("%s is not a valid %s value", what, type),
				 errdetail("It has %u bytes, fewer than a header.", (unsigned) VARSIZE(p))));
	if (p->dim < 1 || p->unused != 0 || VARSIZE(p) != PGVECTOR_HEADER + elemsize * (Size) p->dim)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_VECTOR_CORRUPTED),
				 errmsg("%s is not a valid %s value", what, type),
				 errdetail("Its header says %d dimensions (unused field %d) in %u bytes.",
						   p->dim, p->unused, (unsigned) VARSIZE(p))));
	perpca_check_dim_limit(p->dim);
	*d = p->dim;
	return p;
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
 * In: the readers of rows stats_agg.c calls through its table (stats.h)
 * ------------------------------------------------------------------------
 */

static const void *
vector_row(Datum row, int *d, const char *what)
{
	return pgvector_arg(row, sizeof(float), d, what);
}

static bool
vector_values(const void *row, double *out)
{
	return float_to_double(((const PgVector *) row)->dim, ((const PgVector *) row)->x, out);
}

/* float4 values copied, and whether all are finite (vectorizable). */
static bool
vector_floats(const void *row, float *restrict out)
{
	const PgVector *v = (const PgVector *) row;
	const float *restrict x = v->x;
	int			bad = 0;

	for (int j = 0; j < v->dim; j++)
	{
		out[j] = x[j];
		bad |= !(fabsf(x[j]) <= FLT_MAX);
	}
	return !bad;
}

static const void *
halfvec_row(Datum row, int *d, const char *what)
{
	return pgvector_arg(row, sizeof(uint16), d, what);
}

static bool
halfvec_values(const void *row, double *out)
{
	return half_to_doubles(((const PgVector *) row)->dim, (const uint16 *) ((const PgVector *) row)->x, out);
}

/* binary16 values as float4 (exact: a double of one is a float4), and whether all are finite. */
static bool
halfvec_floats(const void *row, float *out)
{
	const PgVector *v = (const PgVector *) row;
	const uint16 *h = (const uint16 *) v->x;
	int			bad = 0;

	for (int j = 0; j < v->dim; j++)
	{
		out[j] = (float) half_to_double(h[j]);
		bad |= (h[j] & 0x7c00) == 0x7c00;
	}
	return !bad;
}

static const PerpcaRowReader vector_reader = {vector_row, vector_values, vector_floats, PGVECTOR_HEADER, sizeof(float)};
static const PerpcaRowReader halfvec_reader = {halfvec_row, halfvec_values, halfvec_floats, PGVECTOR_HEADER, sizeof(uint16)};

void
perpca_pgvector_init(void)
{
	perpca_stats_row_reader(PERPCA_ROWTYPE_VECTOR, &vector_reader);
	perpca_stats_row_reader(PERPCA_ROWTYPE_HALFVEC, &halfvec_reader);
}

/* ------------------------------------------------------------------------
 * Out: the model row functions on a vector row
 * ------------------------------------------------------------------------
 */

/* A vector of n values, each double rounded to float4 (overflow is an error). */
static PgVector *
vector_build(const double *x, int n, const char *what)
{
	Size		size = PGVECTOR_HEADER + sizeof(float) * (Size) n;
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
	const PgVector *v = pgvector_arg(PG_GETARG_DATUM(ARG_X), sizeof(float), d, "x");
	double	   *x = palloc(sizeof(double) * v->dim);
	int			j;

	if (!float_to_double(v->dim, v->x, x) && (j = perpca_first_nonfinite(x, v->dim)) >= 0)
		perpca_row_element_error("x", j, v->dim, false, x[j],
								 "A vector made by pgvector holds no NaN or infinite values.");
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
