/*
 * stats.h -- the perpca_stats type: sufficient statistics of one group
 *
 * A perpca_stats value holds the row count n, the dimension d, the mean and
 * the centered co-moment matrix M2 = sum (x-mean)(x-mean)^T in one of two
 * forms (the `form` byte):
 *   dense: the packed upper triangle of M2 (row-major, d(d+1)/2 values);
 *   thin:  the n rows themselves, centred at the mean (n x d values), used
 *          while that is smaller, i.e. n <= d/2.  Then M2 = Y^T Y, and the
 *          fit computes S W = Y^T (Y W) / n without ever forming S.
 *
 * The mean is kept as an unevaluated sum mean + mean_lo (a double-double):
 * mean is the correctly rounded value users see, mean_lo the rounding error.
 * Merging groups whose means are far from the origin (1e6 with unit spread)
 * then loses nothing to the rounding of the means.
 *
 * Rows left out (perpca_stats(x, 'skip')) are counted: version 2 is version
 * 1 followed by that count, an int64 after the doubles.  A value with
 * nothing skipped is written as version 1, so values of every release read
 * the same, and a version 1 value means "nothing skipped".
 *
 * Version 3 is the sketch (perpca_sketch(x, ell), sketch.c): n, the mean and
 * mean_lo as above; then delta, trace and B, `rows` rows of d values, a
 * Frequent-Directions sketch of the centred rows: 0 <= M2 - B^T B <= delta I,
 * trace(M2) kept exactly; then the int64 skipped count.  ell and rows live
 * in the header where exact values have zeros.  A sketch's dimension may
 * reach PERPCA_SKETCH_MAX_DIM (pgvector's 16,000), an exact value's
 * PERPCA_MAX_DENSE_DIM.
 *
 * Version 4 is the thin form of float4 rows (a vector or halfvec group):
 * n, the mean and mean_lo as above; then the n x d rows as float4, as they
 * came (not centred), half the bytes of version 1's doubles; then the int64
 * skipped count.  The mean is the rows' own (perpca_stats_rows4_mean); the
 * centred rows are computed from the float4 ones when read
 * (perpca_stats_thin_rows), with the arithmetic the aggregate applies to a
 * float8[] group's rows, so they are version 1's bits.  float8[] groups keep
 * version 1 (2), and every release's values read as they did.
 */
#ifndef PERPCA_STATS_H
#define PERPCA_STATS_H

#include "postgres.h"
#include "fmgr.h"

#include "pg_compat.h"

#define PERPCA_STATS_VERSION 1	/* format byte: nothing skipped */
#define PERPCA_STATS_VERSION_SKIPPED 2	/* version 1 + int64 skipped count at the end */
#define PERPCA_FORM_DENSE 0		/* mean, mean_lo, packed M2 */
#define PERPCA_FORM_THIN 1		/* mean, mean_lo, n centred rows */
#define PERPCA_STATS_VERSION_SKETCH 3	/* the sketch form; int64 skipped count at the end */
#define PERPCA_FORM_SKETCH 2		/* mean, mean_lo, delta, trace, rows x d of B */
#define PERPCA_STATS_VERSION_FLOAT4 4	/* thin form, rows as float4; int64 skipped count at the end */

/* Largest dimension of a sketch (pgvector's storage limit) and largest ell. */
#define PERPCA_SKETCH_MAX_DIM 16000
#define PERPCA_SKETCH_MAX_ELL 4096

/*
 * How many of the ell rows a Frequent Directions shrink keeps are shrunk:
 * the bottom ceil(alpha ell), alpha = 1/8; the top ones are kept as they
 * are (alpha-FD: Desai, Ghashami, Phillips 2016, "Improved practical matrix
 * sketching with guarantees").  Each shrink by delta_t still leaves
 * 0 <= C'C - B'B <= delta_t I and removes at least (s + 1) delta_t of
 * trace, s = perpca_sketch_shrunk_rows(ell), so trace(M2) >= ||B||_F^2 +
 * s delta and delta <= ||A - A_k||_F^2 / (s + 1 - k) (sketch.h).  alpha was
 * chosen on the tuning half of the Debian LSA corpus only
 * (bench/sketch_accuracy.sh's measure, d = 1536, ell = 64, 5 + 5, the
 * sketched fit's own components evaluated in numpy on the exact
 * covariances, mean over five row orders): relative shortfall 1.32e-3 at
 * alpha = 1/4, 0.99e-3 at 1/8, 0.79e-3 at 1/64 (s = 1; 1.9e-2 at 1, plain
 * FD, three orders).  Below 1/8 the gain (at most 2e-4) is about the
 * spread between the row orders of one alpha (up to 3e-4), while the bound
 * grows by a further 17-48% and the a-priori guarantee covers only k <= s;
 * the held-out half's figures are in bench/README.md.
 */
#define PERPCA_SKETCH_ALPHA_DEN 8	/* alpha = 1 / PERPCA_SKETCH_ALPHA_DEN */

static inline int
perpca_sketch_shrunk_rows(int ell)
{
	return ell < 1 ? 1 : (ell + PERPCA_SKETCH_ALPHA_DEN - 1) / PERPCA_SKETCH_ALPHA_DEN;
}

typedef struct PerpcaStats
{
	int32		vl_len_;		/* varlena header (do not touch directly) */
	uint8		version;		/* PERPCA_STATS_VERSION(_SKIPPED, _SKETCH, _FLOAT4) */
	uint8		form;			/* PERPCA_FORM_DENSE, _THIN or _SKETCH */
	int16		ell;			/* sketch: ell; zero in exact forms */
	int32		dim;			/* d */
	int32		rows;			/* sketch: rows of B; padding (zero) in exact forms */
	int64		n;				/* number of rows */
	double		data[FLEXIBLE_ARRAY_MEMBER];	/* mean[d], mean_lo[d], body */
} PerpcaStats;

/* The most rows a thin value holds: thin while n d < d (d + 1) / 2. */
#define PERPCA_STATS_THIN_MAX(d)	((d) / 2)
#define PERPCA_STATS_PACKED(d)	((int64) (d) * ((d) + 1) / 2)
#define PERPCA_STATS_MEAN(s)	((s)->data)
#define PERPCA_STATS_MEAN_LO(s)	((s)->data + (s)->dim)
#define PERPCA_STATS_BODY(s)	((s)->data + 2 * (s)->dim)	/* packed M2, rows, or delta, trace, B */
/* A version 4 value's float4 rows (n x d, row-major, as they came). */
#define PERPCA_STATS_ROWS4(s)	((float *) PERPCA_STATS_BODY(s))

/* Does s keep its thin rows as float4 (version 4)? */
static inline bool
perpca_stats_float4(const PerpcaStats *s)
{
	return s->version == PERPCA_STATS_VERSION_FLOAT4;
}

/*
 * A perpca_stats Datum, detoasted, its header (version, form) checked
 * against its size before anything reads its body: every reader
 * of a stored value takes it through one of these.  _copy gives a copy the
 * caller may change in place (scale_stats_inplace): a float4 thin value
 * comes widened to the float8 thin form (perpca_stats_widen);
 * _copy_as_stored a copy in the form it is stored in.
 */
extern PerpcaStats *perpca_stats_detoast(Datum d);
extern PerpcaStats *perpca_stats_detoast_copy(Datum d);
extern PerpcaStats *perpca_stats_copy_as_stored(Datum d);

#define DatumGetPerpcaStats(x)	perpca_stats_detoast(x)
#define PG_GETARG_PERPCA_STATS(n) DatumGetPerpcaStats(PG_GETARG_DATUM(n))

/*
 * Number of doubles after the header for a value of this form, d and n; for
 * the sketch form, n is the number of rows of B (not the group's count).
 * (A version 4 value has 2 d doubles, its mean, then its float4 rows.)
 */
static inline int64
perpca_stats_nvalues(int form, int d, int64 n)
{
	if (form == PERPCA_FORM_SKETCH)
		return 2 * (int64) d + 2 + n * d;
	return 2 * (int64) d + (form == PERPCA_FORM_THIN ? n * d : PERPCA_STATS_PACKED(d));
}

/* The same for a value: its doubles after the header, whatever its form. */
static inline int64
perpca_stats_value_count(const PerpcaStats *s)
{
	if (perpca_stats_float4(s))
		return 2 * (int64) s->dim;
	return perpca_stats_nvalues(s->form, s->dim, s->form == PERPCA_FORM_SKETCH ? s->rows : s->n);
}

/*
 * Thin form: the n x d rows centred at the mean; NULL for a dense value or
 * a sketch.  A float4 thin value's are computed (perpca_stats_rows4_center),
 * into a new allocation in CurrentMemoryContext on each call (the caller's
 * to keep or free); a float8 thin value's are its body.
 */
extern const double *perpca_stats_thin_rows(const PerpcaStats *s);

/*
 * The rows of a float4 thin value as the aggregate enters a float8[]
 * group's: shift = the first row, mu = the mean of (row - shift); so the
 * mean is shift + mu, and the centred rows (row - shift) - mu.  k >= 1 rows.
 */
extern void perpca_stats_rows4_center(const float *rows, int64 k, int d, double *shift, double *mu);

/* sum += row - shift, for one row in its turn: the step of perpca_stats_rows4_center (vectorizable). */
static inline void
perpca_stats_rows4_add(const float *restrict row, int d, const double *restrict shift,
					   double *restrict sum)
{
	for (int j = 0; j < d; j++)
		sum[j] += (double) row[j] - shift[j];
}

/* A version 4 value of n rows of dimension d, its header and mean zeroed, its rows not. */
extern PerpcaStats *perpca_stats_alloc_float4(int d, int64 n, int64 skipped);

/* s itself, or for a float4 thin value a new float8 thin value of the same rows (version 1's bits). */
extern PerpcaStats *perpca_stats_widen(const PerpcaStats *s);

/* Sketch form: the B rows (rows x d, row-major) with 0 <= M2 - B'B <= delta I, else NULL. */
static inline const double *
perpca_stats_sketch_rows(const PerpcaStats *s, int *rows)
{
	if (s->form != PERPCA_FORM_SKETCH)
	{
		*rows = 0;
		return NULL;
	}
	*rows = s->rows;
	return PERPCA_STATS_BODY(s) + 2;
}

/* delta, in M2's units (not divided by n); 0 for exact forms. */
static inline double
perpca_stats_sketch_delta(const PerpcaStats *s)
{
	return s->form == PERPCA_FORM_SKETCH ? PERPCA_STATS_BODY(s)[0] : 0.0;
}

/* ell; 0 for exact forms. */
static inline int
perpca_stats_sketch_ell(const PerpcaStats *s)
{
	return s->form == PERPCA_FORM_SKETCH ? s->ell : 0;
}

/* trace(M2), exactly (kept by a sketch; summed from the co-moments otherwise). */
extern double perpca_stats_trace(const PerpcaStats *s);

/*
 * A value of form, dimension d and n rows (a sketch: ell, and `rows` rows of
 * B), skipped rows counted, in the version it is written as; its header and
 * mean zeroed, its body too when zero_body.  Errors if it would exceed the
 * allocation limit.
 */
extern PerpcaStats *perpca_stats_alloc(int form, int d, int64 n, int64 skipped, int ell, int rows,
									   bool zero_body);

/* Raise program_limit_exceeded when a sketch's d is above PERPCA_SKETCH_MAX_DIM. */
extern void perpca_check_sketch_dim(int d);

/* *count += more, or the error for the count (what: "perpca_stats row count") out of range. */
extern void perpca_add_count(int64 *count, int64 more, const char *what);

/* The stored mean (mean, mean_lo) = shift + mu, as a double-double (TwoSum). */
extern void perpca_stats_set_mean(PerpcaStats *s, const double *shift, const double *mu);

/* Rows left out of the statistics (0 for a version 1 value). */
extern int64 perpca_stats_skipped(const PerpcaStats *s);

/* Rows, but no variance: one row, or rows all equal (its co-moment is zero). */
extern bool perpca_stats_flat(const PerpcaStats *s);

/* What a row with a NULL, NaN or infinite element does in an aggregate. */
typedef enum PerpcaNulls
{
	PERPCA_NULLS_ERROR,			/* a NULL, NaN or infinite element is an error */
	PERPCA_NULLS_SKIP			/* such a row is left out and counted */
} PerpcaNulls;

/* The nulls argument ('error' or 'skip') argno of an aggregate's transition (NULL is an error). */
extern PerpcaNulls perpca_nulls_fcinfo_arg(FunctionCallInfo fcinfo, int argno);
/* The aggregate context of support function fname (an error outside an aggregate). */
extern MemoryContext perpca_agg_context(FunctionCallInfo fcinfo, const char *fname, int *kind);

/* The state of the aggregates (stats_agg.c), and its value (as their final function gives it). */
typedef struct StatsState StatsState;
extern PerpcaStats *perpca_stats_state_final(StatsState *st);

/* The row types of the aggregates: float8[], and pgvector's vector and halfvec (pgvector_io.c). */
typedef enum PerpcaRowType
{
	PERPCA_ROWTYPE_FLOAT8,		/* float8[] */
	PERPCA_ROWTYPE_VECTOR,		/* pgvector's vector: float4 values */
	PERPCA_ROWTYPE_HALFVEC,		/* pgvector's halfvec: binary16 values */
	PERPCA_ROWTYPE_FLOAT4		/* a row of a float4 thin value (perpca_merge): a
								 * varlena of d float4 values (stats_agg.c) */
} PerpcaRowType;

/*
 * The reader of rows of a type other than float8[]: a value (detoasted, its
 * layout checked; what names it in errors) and its dimension; its values as
 * d doubles, or as d float4 (both exact), and whether all are finite (in
 * the same pass).  pgvector_io.c fills the aggregates' table when the
 * library loads, so they call it only through the table.
 */
typedef struct PerpcaRowReader
{
	const void *(*row) (Datum row, int *d, const char *what);
	bool		(*values) (const void *row, double *out);
	bool		(*floats) (const void *row, float *out);
	Size		header;			/* bytes before the values */
	Size		elemsize;		/* bytes of one value: 4, IEEE binary32; 2,
								 * binary16 (stats_agg.c checks them as
								 * stored) */
} PerpcaRowReader;

extern void perpca_stats_row_reader(PerpcaRowType type, const PerpcaRowReader *reader);

/* pgvector_io.c: put the readers of vector and halfvec in the table (_PG_init). */
extern void perpca_pgvector_init(void);

/*
 * The hint of the aggregate's error for a row's missing element; the readers
 * of a query (row_reader.c) put their own option's hint in its place.
 */
#define PERPCA_SKIP_HINT "Use perpca_stats(x, 'skip') to leave out rows with a NULL, NaN or infinite element and count them (perpca_skipped)."

/* The same for the model's row functions (missing.c). */
#define PERPCA_OBSERVED_HINT "Pass missing => 'observed' to score the row on its observed coordinates, or missing => 'skip' to return NULL for it; perpca_model_impute() fills the gaps."

/*
 * The error for a NULL (isnull) or non-finite element at 0-based position
 * j of a row of d values, worded the same by the aggregate and the row
 * functions of a model (what: "input row", "x"), with a hint naming hint.
 */
extern pg_noreturn void perpca_row_element_error(const char *what, int j, int d, bool isnull,
												double value, const char *hint);

/* Index of the first non-finite value of x[0..d), or -1. */
extern int	perpca_first_nonfinite(const double *x, int d);

/*
 * Check a value read from outside, all of it: its header (format version,
 * form, size), then its counts and numbers (finite, consistent: 22000).
 */
extern void perpca_stats_validate(const PerpcaStats *s);

/*
 * Second-moment matrix about a centre c (d x d, full, row-major):
 *   out = M2/n + (mean - c)(mean - c)^T.
 * center == NULL means c = the group's own mean (the covariance); a zero
 * vector gives the uncentered moment (1/n) sum x x^T.  Requires n > 0.
 * For a sketch, M2 is its estimate B^T B (below M2 by at most delta I): the
 * dense paths that call this (perpca_covariance, evaluation, ranks) see the
 * sketch's estimate; a sketch of d above PERPCA_MAX_DIM is refused (its
 * d x d matrix is too large).
 */
extern void perpca_stats_moment(const PerpcaStats *s, const double *center, double *out);

/* mean - c, computed from the double-double mean (d values into out). */
extern void perpca_stats_offset(const PerpcaStats *s, const double *center, double *out);

#endif							/* PERPCA_STATS_H */
