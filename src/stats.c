/*
 * stats.c -- the perpca_stats value: validation, text and binary I/O,
 * accessors and the second-moment matrix the fit reads
 *
 * The aggregates that build values are in stats_agg.c.
 */
#include "postgres.h"

#include <ctype.h>
#include <float.h>
#include <limits.h>
#include <math.h>

#include "common/int.h"
#include "common/shortest_dec.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "libpq/pqformat.h"
#include "access/genam.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "error_kinds.h"
#include "linalg.h"
#include "perpca.h"
#include "stats.h"

PG_FUNCTION_INFO_V1(perpca_stats_in);
PG_FUNCTION_INFO_V1(perpca_stats_out);
PG_FUNCTION_INFO_V1(perpca_stats_recv);
PG_FUNCTION_INFO_V1(perpca_stats_send);
PG_FUNCTION_INFO_V1(perpca_mean);
PG_FUNCTION_INFO_V1(perpca_covariance);

/* ------------------------------------------------------------------------
 * The stored value
 * ------------------------------------------------------------------------
 */

/* The sketch's fields sit where exact values have zeros: their layout is unchanged. */
StaticAssertDecl(PERPCA_SKETCH_MAX_DIM == PERPCA_MAX_DIM, "a sketch goes up to perpca's limit");
StaticAssertDecl(offsetof(PerpcaStats, rows) == 12 && offsetof(PerpcaStats, n) == 16 &&
				 offsetof(PerpcaStats, data) == 24, "perpca_stats header layout changed");

/* Bytes of a version 4 value's float4 rows. */
static inline int64
rows4_bytes(const PerpcaStats *s)
{
	return perpca_stats_float4(s) ? (int64) sizeof(float) * s->n * s->dim : 0;
}

/* Where a value of version 2, 3 or 4 keeps its skipped count: after the doubles (and float4 rows). */
static inline char *
skipped_ptr(const PerpcaStats *s)
{
	return (char *) s->data + sizeof(double) * perpca_stats_value_count(s) + rows4_bytes(s);
}

/*
 * The version a value is written as: 1 unless it has skipped rows (2), is
 * a sketch (3) or keeps float4 rows (4).
 */
static int
out_version(const PerpcaStats *s)
{
	if (s->form == PERPCA_FORM_SKETCH)
		return PERPCA_STATS_VERSION_SKETCH;
	if (perpca_stats_float4(s))
		return PERPCA_STATS_VERSION_FLOAT4;
	return perpca_stats_skipped(s) > 0 ? PERPCA_STATS_VERSION_SKIPPED : PERPCA_STATS_VERSION;
}

/* 'dense', 'thin' or 'sketch': how a value of this form stores its co-moments. */
static const char *
form_name(int form)
{
	return form == PERPCA_FORM_SKETCH ? "sketch" : form == PERPCA_FORM_THIN ? "thin" : "dense";
}

/* Does the value carry a skipped count after its doubles (versions 2, 3 and 4)? */
static inline bool
has_skipped(const PerpcaStats *s)
{
	return s->version != PERPCA_STATS_VERSION;
}

/*
 * The bytes of a value of this version and form with nrows rows (n, or a
 * sketch's rows): the header, its doubles (for version 4 the mean and
 * mean_lo, then nrows x d float4), and the skipped count of versions 2-4.
 */
static int64
value_bytes(int version, int form, int d, int64 nrows)
{
	int64		bytes = offsetof(PerpcaStats, data);

	if (version == PERPCA_STATS_VERSION_FLOAT4)
		bytes += sizeof(double) * 2 * (int64) d + sizeof(float) * nrows * d;
	else
		bytes += sizeof(double) * perpca_stats_nvalues(form, d, nrows);
	return bytes + (version != PERPCA_STATS_VERSION ? sizeof(int64) : 0);
}

void
perpca_check_sketch_dim(int d)
{
	if (d > PERPCA_SKETCH_MAX_DIM)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_DIM_LIMIT),
				 errmsg("dimension %d exceeds the limit of %d for a sketch", d, PERPCA_SKETCH_MAX_DIM)));
}

/*
 * The bytes of a new value of this version and form with nrows rows (n, or
 * a sketch's rows), or an error when it is too large to allocate: its rows
 * (of doubles, or float4 for version 4) first, so that nrows d cannot
 * overflow.
 */
static Size
alloc_size(int version, int form, int d, int64 nrows)
{
	int64		elem = version == PERPCA_STATS_VERSION_FLOAT4 ? sizeof(float) : sizeof(double);
	int64		size;

	if (form != PERPCA_FORM_DENSE && nrows > (int64) (MaxAllocSize / elem) / d)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_DIM_LIMIT),
				 errmsg("perpca_stats %s with %lld rows of dimension %d is too large",
						form == PERPCA_FORM_SKETCH ? "sketch" : "value", (long long) nrows, d)));
	size = value_bytes(version, form, d, nrows);
	if (size > (int64) MaxAllocSize)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_DIM_LIMIT),
				 errmsg("perpca_stats value of dimension %d is too large", d)));
	return size;
}

/* A new value of this version and form: its header set, its mean zeroed, its body zeroed if zero_body. */
static PerpcaStats *
alloc_value(int version, int form, int d, int64 n, int64 skipped, int ell, int rows, bool zero_body)
{
	Size		size = alloc_size(version, form, d, form == PERPCA_FORM_SKETCH ? rows : n);
	PerpcaStats *s = zero_body ? palloc0(size) : palloc(size);

	if (!zero_body)
		memset(s, 0, offsetof(PerpcaStats, data) + sizeof(double) * 2 * d);
	SET_VARSIZE(s, size);
	s->version = version;
	s->form = form;
	s->ell = (int16) ell;
	s->dim = d;
	s->rows = rows;
	s->n = n;
	if (has_skipped(s))
		memcpy(skipped_ptr(s), &skipped, sizeof(int64));
	return s;
}

PerpcaStats *
perpca_stats_alloc(int form, int d, int64 n, int64 skipped, int ell, int rows, bool zero_body)
{
	bool		sketch = form == PERPCA_FORM_SKETCH;

	Assert(skipped >= 0 && rows >= 0 && rows <= ell && ell <= PERPCA_SKETCH_MAX_ELL);
	if (sketch)
		perpca_check_sketch_dim(d);
	return alloc_value(sketch ? PERPCA_STATS_VERSION_SKETCH :
					   skipped > 0 ? PERPCA_STATS_VERSION_SKIPPED : PERPCA_STATS_VERSION,
					   form, d, n, skipped, ell, rows, zero_body);
}

PerpcaStats *
perpca_stats_alloc_float4(int d, int64 n, int64 skipped)
{
	Assert(skipped >= 0 && n >= 0);
	return alloc_value(PERPCA_STATS_VERSION_FLOAT4, PERPCA_FORM_THIN, d, n, skipped, 0, 0, false);
}

void
perpca_add_count(int64 *count, int64 more, const char *what)
{
	int64		sum;

	if (pg_add_s64_overflow(*count, more, &sum))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_OUT_OF_RANGE),
				 errmsg("%s out of range", what),
				 errdetail("Merging %lld and %lld rows exceeds the largest count.",
						   (long long) *count, (long long) more)));
	*count = sum;
}

void
perpca_stats_set_mean(PerpcaStats *s, const double *shift, const double *mu)
{
	for (int j = 0; j < s->dim; j++)
	{
		double		hi = shift[j] + mu[j];
		double		bb = hi - shift[j];

		PERPCA_STATS_MEAN(s)[j] = hi;
		PERPCA_STATS_MEAN_LO(s)[j] = (shift[j] - (hi - bb)) + (mu[j] - bb);
	}
}

int64
perpca_stats_skipped(const PerpcaStats *s)
{
	int64		skipped;

	if (!has_skipped(s))
		return 0;
	memcpy(&skipped, skipped_ptr(s), sizeof(int64));
	return skipped;
}

bool
perpca_stats_flat(const PerpcaStats *s)
{
	const double *body = PERPCA_STATS_BODY(s);
	int64		len = perpca_stats_value_count(s) - 2 * (int64) s->dim;

	if (s->n <= 0)
		return false;
	if (s->form == PERPCA_FORM_SKETCH)
		return body[1] == 0.0;	/* trace(M2), exact */
	if (perpca_stats_float4(s))
	{
		const float *rows = PERPCA_STATS_ROWS4(s);

		/* every row equals the first (-0 and +0 too: their difference is zero) */
		for (int64 i = (int64) s->dim; i < s->n * s->dim; i++)
			if (rows[i] != rows[i % s->dim])
				return false;
		return true;
	}
	for (int64 i = 0; i < len; i++)
		if (body[i] != 0.0)
			return false;
	return true;
}

static void
invalid_stats(const char *detail)
{
	ereport(ERROR,
			(errcode(PERPCA_ERRCODE_BAD_VALUE),
			 errmsg("invalid perpca_stats value"),
			 errdetail("%s", detail)));
}

static void
corrupted(const PerpcaStats *s, const char *detail)
{
	ereport(ERROR,
			(errcode(PERPCA_ERRCODE_STATS_CORRUPTED),
			 errmsg("perpca_stats value is corrupted"),
			 errdetail("Its size is %zu bytes; %s", (Size) VARSIZE_ANY(s), detail)));
}

/*
 * The size in bytes of a value of s's header (its version and form known),
 * or -1 when no value has such a header: a dimension, count, ell or rows
 * out of range.  A thin value's n is bounded first, so n d cannot overflow.
 */
static int64
header_size(const PerpcaStats *s)
{
	int64		rows = s->form == PERPCA_FORM_SKETCH ? s->rows : s->n;

	if (s->dim < 1 || s->dim > PERPCA_MAX_DIM || s->n < 0)
		return -1;
	if (s->form == PERPCA_FORM_SKETCH &&
		(s->ell < 1 || s->ell > PERPCA_SKETCH_MAX_ELL || s->rows < 0 || s->rows > s->ell))
		return -1;
	if (s->form == PERPCA_FORM_THIN && rows > (int64) (MaxAllocSize / sizeof(double)) / s->dim)
		return -1;
	return value_bytes(s->version, s->form, s->dim, rows);
}

/* Reject format versions and forms this build does not know (0A000). */
static void
check_format(int version, int form)
{
	if (!((version == PERPCA_STATS_VERSION || version == PERPCA_STATS_VERSION_SKIPPED) &&
		  (form == PERPCA_FORM_DENSE || form == PERPCA_FORM_THIN)) &&
		!(version == PERPCA_STATS_VERSION_SKETCH && form == PERPCA_FORM_SKETCH) &&
		!(version == PERPCA_STATS_VERSION_FLOAT4 && form == PERPCA_FORM_THIN))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_UNSUPPORTED),
				 errmsg("unsupported perpca_stats format version %d form %d", version, form),
				 errhint("The value was written by a newer version of perpca.")));
}

/*
 * Reject format versions and forms this build does not know (0A000), and a
 * value whose size is not the one its header (form, dimension, rows, ell)
 * gives (XX001): after it, the body can be read.  O(1).
 */
static void
perpca_stats_check_version(const PerpcaStats *s)
{
	int64		size;

	if (VARSIZE_ANY(s) < offsetof(PerpcaStats, data))
		corrupted(s, "a value has a header of 24 bytes.");
	check_format(s->version, s->form);
	size = header_size(s);
	if (size < 0)
		corrupted(s, psprintf("its header (dimension %d, %lld rows, ell %d, %d rows of a sketch) is out of range.",
							  s->dim, (long long) s->n, s->ell, s->rows));
	if (size != (int64) VARSIZE_ANY(s))
		corrupted(s, psprintf("its header (%s, dimension %d, %lld rows%s) gives %lld bytes.",
							  form_name(s->form), s->dim, (long long) s->n,
							  s->form == PERPCA_FORM_SKETCH ? psprintf(", %d rows of B", s->rows) : "",
							  (long long) size));
	/* its size checked, the count after its doubles can be read */
	if (perpca_stats_skipped(s) < 0)
		invalid_stats("The count of skipped rows must not be negative.");
}

PerpcaStats *
perpca_stats_detoast(Datum d)
{
	PerpcaStats *s = (PerpcaStats *) PG_DETOAST_DATUM(d);

	perpca_stats_check_version(s);
	return s;
}

PerpcaStats *
perpca_stats_copy_as_stored(Datum d)
{
	PerpcaStats *s = (PerpcaStats *) PG_DETOAST_DATUM_COPY(d);

	perpca_stats_check_version(s);
	return s;
}

PerpcaStats *
perpca_stats_detoast_copy(Datum d)
{
	PerpcaStats *s = perpca_stats_detoast(d);
	PerpcaStats *wide;

	if (!perpca_stats_float4(s))
		return s == (PerpcaStats *) DatumGetPointer(d) ? perpca_stats_copy_as_stored(d) : s;
	wide = perpca_stats_widen(s);
	if (s != (PerpcaStats *) DatumGetPointer(d))
		pfree(s);
	return wide;
}

/*
 * Relative tolerance of the checks below for what rounding leaves in a
 * value perpca computed: its sums of n products carry relative errors of a
 * few n eps in the worst case (about 1e-7 at a billion rows, far less in
 * practice), and 1e-6 leaves room for that while still refusing values no
 * rows can have.
 */
#define CONSISTENCY_TOL 1e-6

/*
 * The packed M2 of a dense value is a co-moment matrix: a non-negative
 * diagonal and |M2_ij| <= sqrt(M2_ii M2_jj) (Cauchy-Schwarz), within
 * CONSISTENCY_TOL (and DBL_MIN: subnormal square roots round coarsely);
 * its entries are finite (checked before).
 */
static void
check_comoments(const PerpcaStats *s)
{
	const double *m2 = PERPCA_STATS_BODY(s);
	double	   *root = palloc(sizeof(double) * s->dim);
	int64		k = 0;

	for (int i = 0; i < s->dim; k += s->dim - i, i++)
	{
		if (m2[k] < 0.0)
			invalid_stats("The co-moment matrix must have a non-negative diagonal.");
		root[i] = sqrt(m2[k]);
	}
	k = 0;
	for (int i = 0; i < s->dim; i++)
		for (int j = i; j < s->dim; j++, k++)
			if (!(fabs(m2[k]) <= root[i] * root[j] * (1.0 + CONSISTENCY_TOL) + DBL_MIN))
				invalid_stats(psprintf("Co-moment (%d, %d) exceeds the square root of the product of the diagonal entries (%d, %d) and (%d, %d) (Cauchy-Schwarz): no rows have such co-moments.",
									   i + 1, j + 1, i + 1, i + 1, j + 1, j + 1));
	pfree(root);
}

/*
 * The rows of a thin value are centred at its mean: each column sums to
 * zero, within CONSISTENCY_TOL of the sum of its absolute values; and
 * their co-moments (the diagonal of M2 = Y'Y) are within the range of
 * float8, as a dense value's are.
 */
static void
check_thin_rows(const PerpcaStats *s)
{
	const double *rows = PERPCA_STATS_BODY(s);
	double	   *sum = palloc0(sizeof(double) * 3 * s->dim);
	double	   *mag = sum + s->dim;
	double	   *sq = mag + s->dim;

	for (int64 i = 0; i < s->n; i++)
		for (int j = 0; j < s->dim; j++)
		{
			double		y = rows[i * s->dim + j];

			sum[j] += y;
			mag[j] += fabs(y);
			sq[j] += y * y;
		}
	for (int j = 0; j < s->dim; j++)
	{
		if (!(fabs(sum[j]) <= mag[j] * CONSISTENCY_TOL))
			invalid_stats(psprintf("The rows of a thin value are centred at its mean, but column %d sums to %g.",
								   j + 1, sum[j]));
		if (!isfinite(sq[j]))
			invalid_stats(psprintf("The sum of squares of column %d of the rows of a thin value exceeds the range of float8.",
								   j + 1));
	}
	pfree(sum);
}

/*
 * A float4 thin value's rows are finite, and its mean is theirs: centred
 * at it, each column sums to zero within CONSISTENCY_TOL of the sum of its
 * absolute values, as a float8 thin value's rows must (rows all equal: the
 * mean is the row).  Sums of float4 values cannot overflow a double.
 */
static void
check_rows4(const PerpcaStats *s)
{
	const float *rows = PERPCA_STATS_ROWS4(s);
	const double *mean = PERPCA_STATS_MEAN(s);
	const double *lo = PERPCA_STATS_MEAN_LO(s);
	double	   *sum = palloc0(sizeof(double) * 2 * s->dim);
	double	   *mag = sum + s->dim;

	for (int64 i = 0; i < s->n; i++)
		for (int j = 0; j < s->dim; j++)
		{
			float		x = rows[i * s->dim + j];
			double		y = ((double) x - mean[j]) - lo[j];

			if (!isfinite(x))
				invalid_stats("The rows of a thin value must be finite.");
			sum[j] += y;
			mag[j] += fabs(y);
		}
	for (int j = 0; j < s->dim; j++)
		if (!(fabs(sum[j]) <= mag[j] * CONSISTENCY_TOL))
			invalid_stats(psprintf("The mean of a thin value of float4 rows is theirs, but column %d's is off by %g.",
								   j + 1, sum[j] / (double) s->n));
	pfree(sum);
}

/*
 * The first j (0-based) whose mean_lo is not the rounding error of mean, or
 * -1.  perpca keeps mean + mean_lo as a double-double whose low part is
 * within half a unit in the last place of mean (TwoSum), or about two for a
 * scaled mean; a value beyond four ("mean={1} mean_lo={5}", read as 6) is
 * not one perpca writes.
 */
static int
mean_lo_outlier(const double *mean, const double *lo, int d)
{
	for (int j = 0; j < d; j++)
	{
		double		hi = fabs(mean[j]);

		if (!(fabs(lo[j]) <= 4.0 * (nextafter(hi, INFINITY) - hi)))
			return j;
	}
	return -1;
}

/*
 * A sketch's own rules beyond its header's: B has at most n rows, none for
 * a group of at most one row (its co-moment is zero); delta >= 0; the exact
 * trace(M2) is at least ||B||_F^2 + s delta, s = perpca_sketch_shrunk_rows(ell)
 * (what Frequent Directions shrinks away is at least s delta), up to rounding.
 */
static void
check_sketch(const PerpcaStats *s)
{
	const double *body = PERPCA_STATS_BODY(s);
	double		delta = body[0];
	double		trace = body[1];
	double		frob;

	if (s->rows > s->n || (s->n <= 1 && s->rows > 0))
		invalid_stats("A sketch of n rows has at most n rows of B, and none for a single row.");
	if (delta < 0.0 || trace < 0.0)
		invalid_stats("A sketch's delta and trace must not be negative.");
	if (s->n <= 1 && (delta != 0.0 || trace != 0.0))
		invalid_stats("A sketch of at most one row has zero delta and trace.");
	frob = linalg_dot((int64) s->rows * s->dim, body + 2, body + 2);
	if (!(frob + perpca_sketch_shrunk_rows(s->ell) * delta <= trace * (1.0 + 1e-8) + 1e-300))
		invalid_stats("A sketch's trace must be at least the squared norm of its rows plus ceil(ell/8) times delta.");
}

void
perpca_stats_validate(const PerpcaStats *s)
{
	int64		total;

	perpca_stats_check_version(s);	/* the header's counts are in range */
	if (s->form != PERPCA_FORM_SKETCH)
		perpca_check_dense_dim_limit(s->dim, NULL);
	total = perpca_stats_value_count(s);
	for (int64 i = 0; i < total; i++)
	{
		if (!isfinite(s->data[i]))
			invalid_stats("The mean and co-moment values must be finite.");
		if (s->n == 0 && s->data[i] != 0.0)
			invalid_stats("A value with no rows must have zero mean and co-moments.");
	}
	for (int j = 0; j < s->dim; j++)
		if (!isfinite(PERPCA_STATS_MEAN(s)[j] + PERPCA_STATS_MEAN_LO(s)[j]))
			invalid_stats("The mean (mean + mean_lo) must be finite.");
	if (mean_lo_outlier(PERPCA_STATS_MEAN(s), PERPCA_STATS_MEAN_LO(s), s->dim) >= 0)
		invalid_stats("mean_lo must be the rounding error of mean (within a few units in its last place).");
	if (s->form == PERPCA_FORM_DENSE)
		check_comoments(s);
	if (s->form == PERPCA_FORM_THIN)
	{
		if (perpca_stats_float4(s))
			check_rows4(s);
		else
			check_thin_rows(s);
	}
	if (s->form == PERPCA_FORM_SKETCH)
		check_sketch(s);
}

/* ------------------------------------------------------------------------
 * Text and binary input/output
 * ------------------------------------------------------------------------
 */

static void
syntax_error(const char *str, const char *detail)
{
	ereport(ERROR,
			(errcode(PERPCA_ERRCODE_STATS_TEXT),
			 errmsg("invalid input syntax for type perpca_stats: \"%.80s%s\"",
					str, strlen(str) > 80 ? "..." : ""),
			 errdetail("%s", detail)));
}

static void
skip_blanks(const char **p)
{
	while (**p == ' ')
		(*p)++;
}

/* Is the literal token tok next at *p (after blanks)? */
static bool
next_token_is(const char **p, const char *tok)
{
	skip_blanks(p);
	return strncmp(*p, tok, strlen(tok)) == 0;
}

/* Expect the literal token tok at *p; advance past it. */
static void
expect_token(const char **p, const char *tok, const char *str)
{
	if (!next_token_is(p, tok))
		syntax_error(str, psprintf("Expected \"%s\".", tok));
	*p += strlen(tok);
}

/*
 * Whether text..end is a number as perpca_stats_out writes it (the forms of
 * 0.1.0 and 0.2.0 too): an optional minus, no leading zeros, digits, and
 * for a float8 (real) an optional fraction and exponent "e+NN" / "e-NN".
 * Not accepted: "+", blanks, hexadecimal, "E", "inf", "nan".
 */
static bool
canonical_number(const char *text, const char *end, bool real)
{
	const char *c = text;

	if (c < end && *c == '-')
		c++;
	if (c >= end || !isdigit((unsigned char) *c) || (*c == '0' && c + 1 < end && isdigit((unsigned char) c[1])))
		return false;
	while (c < end && isdigit((unsigned char) *c))
		c++;
	if (real && c < end && *c == '.')
	{
		if (++c >= end || !isdigit((unsigned char) *c))
			return false;
		while (c < end && isdigit((unsigned char) *c))
			c++;
	}
	if (real && c < end && *c == 'e')
	{
		if (++c >= end || (*c != '+' && *c != '-') || ++c >= end || !isdigit((unsigned char) *c))
			return false;
		while (c < end && isdigit((unsigned char) *c))
			c++;
	}
	return c == end;
}

/* Parse a signed 64-bit integer at *p, written as perpca_stats_out writes it. */
static int64
parse_int(const char **p, const char *str)
{
	char	   *end;
	long long	v;

	errno = 0;
	v = strtoll(*p, &end, 10);
	if (end == *p || errno != 0)
		syntax_error(str, "Expected an integer.");
	if (!canonical_number(*p, end, false))
		syntax_error(str, psprintf("\"%.*s\" is not an integer as perpca_stats writes one (digits, an optional minus sign).",
								   (int) Min(end - *p, 40), *p));
	*p = end;
	return (int64) v;
}

/*
 * Parse one finite number at *p, written as perpca_stats_out writes it; in a
 * list of count numbers (count >= 0), the error for none says so.
 */
static double
parse_real(const char **p, const char *str, int64 count)
{
	char	   *end;
	double		v;

	errno = 0;
	v = strtod(*p, &end);
	if (end == *p)
		syntax_error(str, count < 0 ? "Expected a number." :
					 psprintf("Expected %lld numbers in a list.", (long long) count));
	/* ERANGE on a subnormal result is fine; on overflow or underflow to 0 it is not */
	if (!isfinite(v) || (errno == ERANGE && v == 0.0))
		syntax_error(str, "Values must be finite numbers within the range of float8.");
	if (!canonical_number(*p, end, true))
		syntax_error(str, psprintf("\"%.*s\" is not a number as perpca_stats writes one (such as -1.25e-07).",
								   (int) Min(end - *p, 40), *p));
	*p = end;
	return v;
}

/* Parse one finite float4 at *p, written as perpca_stats_out writes it (strtof: float4in's rounding). */
static float
parse_float4(const char **p, const char *str, int64 count)
{
	char	   *end;
	float		v;

	errno = 0;
	v = strtof(*p, &end);
	if (end == *p)
		syntax_error(str, psprintf("Expected %lld numbers in a list.", (long long) count));
	if (!isfinite(v) || (errno == ERANGE && v == 0.0f))
		syntax_error(str, "The rows of a thin value of version 4 must be finite numbers within the range of float4.");
	if (!canonical_number(*p, end, true))
		syntax_error(str, psprintf("\"%.*s\" is not a number as perpca_stats writes one (such as -1.25e-07).",
								   (int) Min(end - *p, 40), *p));
	*p = end;
	return v;
}

/* Parse "{v1,v2,...}" with exactly count finite values into out (float4 values into out4 when not NULL). */
static void
parse_list(const char **p, double *out, float *out4, int64 count, const char *str)
{
	expect_token(p, "{", str);
	for (int64 i = 0; i < count; i++)
	{
		if (next_token_is(p, "}"))
			syntax_error(str, psprintf("A list has %lld values where %lld are expected.",
									   (long long) i, (long long) count));
		if (i > 0)
			expect_token(p, ",", str);
		if (out4 != NULL)
			out4[i] = parse_float4(p, str, count);
		else
			out[i] = parse_real(p, str, count);
	}
	if (next_token_is(p, ","))
		syntax_error(str, psprintf("A list has more than the %lld values expected.", (long long) count));
	expect_token(p, "}", str);
}

/*
 * The fields of the text form's header after "v<version>", in order, each
 * in the versions of its mask (bit v); TextHeader holds their values.
 */
enum
{
	F_N, F_D, F_SKIPPED, F_ELL, F_ROWS, F_DELTA, F_TRACE, NFIELDS
};
#define V(v) (1 << (v))
static const struct
{
	const char *key;
	int			versions;
}			text_fields[NFIELDS] = {
	{" n=", V(1) | V(2) | V(3) | V(4)}, {" d=", V(1) | V(2) | V(3) | V(4)},
	{" skipped=", V(2) | V(3) | V(4)}, {" ell=", V(3)}, {" rows=", V(3)}, {" delta=", V(3)},
	{" trace=", V(3)}
};
#undef V

/* Is field f in the text header of version v? */
static inline bool
text_field_in(int f, int64 v)
{
	return (text_fields[f].versions & (1 << v)) != 0;
}

typedef struct TextHeader
{
	int64		version;
	int64		f[NFIELDS];		/* integers; 0 where the version has none */
	double		delta;
	double		trace;
} TextHeader;

/* The header of value s. */
static void
header_of(const PerpcaStats *s, TextHeader *h)
{
	h->version = out_version(s);
	h->f[F_N] = s->n;
	h->f[F_D] = s->dim;
	h->f[F_SKIPPED] = perpca_stats_skipped(s);
	h->f[F_ELL] = perpca_stats_sketch_ell(s);
	h->f[F_ROWS] = s->form == PERPCA_FORM_SKETCH ? s->rows : 0;
	h->delta = perpca_stats_sketch_delta(s);
	h->trace = s->form == PERPCA_FORM_SKETCH ? PERPCA_STATS_BODY(s)[1] : 0.0;
}

/* Check the fields of a header read from text (those of a sketch when version 3). */
static void
check_header(const TextHeader *h, const char *str)
{
	bool		sketch = h->version == PERPCA_STATS_VERSION_SKETCH;

	if (h->f[F_SKIPPED] < 0)
		syntax_error(str, "The count of skipped rows must not be negative.");
	if (sketch && (h->f[F_ELL] < 1 || h->f[F_ELL] > PERPCA_SKETCH_MAX_ELL))
		syntax_error(str, psprintf("ell must be between 1 and %d.", PERPCA_SKETCH_MAX_ELL));
	if (sketch && (h->f[F_ROWS] < 0 || h->f[F_ROWS] > h->f[F_ELL]))
		syntax_error(str, "A sketch has between 0 and ell rows.");
	if (h->f[F_N] < 0)
		syntax_error(str, "The row count n must not be negative.");
	if (h->f[F_D] < 1)
		syntax_error(str, "The dimension d must be positive.");
	if (h->f[F_D] > INT_MAX)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_DIM_LIMIT),
				 errmsg("dimension %lld exceeds the limit of %d", (long long) h->f[F_D],
						sketch ? PERPCA_SKETCH_MAX_DIM : PERPCA_MAX_DENSE_DIM)));
	if (sketch)
		perpca_check_sketch_dim((int) h->f[F_D]);
	else
		perpca_check_dense_dim_limit((int) h->f[F_D], NULL);
}

/*
 * Parse "v1 n=<n> d=<d>", "v2 n=<n> d=<d> skipped=<k>", "v3 n=<n> d=<d>
 * skipped=<k> ell=<l> rows=<r> delta=<x> trace=<t>" or "v4 n=<n> d=<d>
 * skipped=<k>" and check it.
 */
static void
parse_header(const char **p, const char *str, TextHeader *h)
{
	memset(h, 0, sizeof(*h));
	expect_token(p, "v", str);
	h->version = parse_int(p, str);
	if (h->version < PERPCA_STATS_VERSION || h->version > PERPCA_STATS_VERSION_FLOAT4)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_UNSUPPORTED),
				 errmsg("unsupported perpca_stats format version in \"%.20s\"", str),
				 errhint("The value was written by a newer version of perpca.")));
	for (int f = 0; f < NFIELDS; f++)
	{
		if (!text_field_in(f, h->version))
			continue;
		expect_token(p, text_fields[f].key + 1, str);
		if (f == F_DELTA || f == F_TRACE)
			*(f == F_DELTA ? &h->delta : &h->trace) = parse_real(p, str, -1);
		else
			h->f[f] = parse_int(p, str);
	}
	check_header(h, str);
}

/* The value the header describes, zeroed (its delta and trace set). */
static PerpcaStats *
header_value(const TextHeader *h, int form, const char *str)
{
	PerpcaStats *s;

	if (h->version == PERPCA_STATS_VERSION_FLOAT4)
	{
		if (form != PERPCA_FORM_THIN)
			syntax_error(str, "A value of version 4 has float4 rows (\"rows=\").");
		return perpca_stats_alloc_float4((int) h->f[F_D], h->f[F_N], h->f[F_SKIPPED]);
	}
	if (h->version == PERPCA_STATS_VERSION_SKETCH)
		form = PERPCA_FORM_SKETCH;
	s = perpca_stats_alloc(form, (int) h->f[F_D], h->f[F_N], h->f[F_SKIPPED], (int) h->f[F_ELL],
						   (int) h->f[F_ROWS], true);
	if (form != PERPCA_FORM_SKETCH)
		return s;
	PERPCA_STATS_BODY(s)[0] = h->delta;
	PERPCA_STATS_BODY(s)[1] = h->trace;
	return s;
}

/* The keyword of the body's list in the text form of a value of this form. */
static const char *
body_keyword(int form)
{
	return form == PERPCA_FORM_SKETCH ? "sketch=" : form == PERPCA_FORM_THIN ? "rows=" : "m2=";
}

/* The body's list in the text form (a sketch's B, without delta and trace) and its length. */
static double *
text_body(PerpcaStats *s, int64 *count)
{
	int			skip = s->form == PERPCA_FORM_SKETCH ? 2 : 0;

	if (perpca_stats_float4(s))
	{
		*count = s->n * s->dim;
		return NULL;			/* PERPCA_STATS_ROWS4 */
	}
	*count = perpca_stats_value_count(s) - 2 * s->dim - skip;
	return PERPCA_STATS_BODY(s) + skip;
}

/*
 * Text form: "v1 n=<n> d=<d> mean={...} mean_lo={...} m2={packed M2}" (dense)
 * or "... mean_lo={...} rows={n x d centred rows, row-major}" (thin); "v2
 * n=<n> d=<d> skipped=<k> mean=..." when k rows were skipped; a sketch "v3
 * n=<n> d=<d> skipped=<k> ell=<l> rows=<r> delta=<x> trace=<t> mean={...}
 * mean_lo={...} sketch={r x d rows of B, row-major}"; float4 rows "v4 n=<n>
 * d=<d> skipped=<k> mean={...} mean_lo={...} rows={n x d float4 rows as
 * they came, row-major}".
 */
Datum
perpca_stats_in(PG_FUNCTION_ARGS)
{
	const char *str = PG_GETARG_CSTRING(0);
	const char *p = str;
	TextHeader	h;
	int64		d;
	double	   *mean;
	double	   *body;
	int64		count;
	int			j;
	PerpcaStats *s;

	parse_header(&p, str, &h);
	d = h.f[F_D];
	mean = palloc(sizeof(double) * 2 * d);
	expect_token(&p, "mean=", str);
	parse_list(&p, mean, NULL, d, str);
	expect_token(&p, "mean_lo=", str);
	parse_list(&p, mean + d, NULL, d, str);
	s = header_value(&h, next_token_is(&p, "rows=") ? PERPCA_FORM_THIN : PERPCA_FORM_DENSE, str);
	if ((j = mean_lo_outlier(mean, mean + d, (int) d)) >= 0)
		syntax_error(str, psprintf("mean_lo element %d (%g) is not the rounding error of mean element %d (%g): it must be within a few units in its last place.",
								   j + 1, mean[d + j], j + 1, mean[j]));
	memcpy(s->data, mean, sizeof(double) * 2 * d);
	expect_token(&p, body_keyword(s->form), str);
	body = text_body(s, &count);
	parse_list(&p, body, perpca_stats_float4(s) ? PERPCA_STATS_ROWS4(s) : NULL, count, str);
	skip_blanks(&p);
	if (*p != '\0')
		syntax_error(str, "Unexpected text after the value.");
	perpca_stats_validate(s);
	PG_RETURN_POINTER(s);
}

/*
 * Append "{...}" of count values, doubles x or (x4 not NULL) float4 x4,
 * each in shortest exact (round-trip) form.
 */
static void
append_list(StringInfo buf, const double *x, const float *x4, int64 count)
{
	char		num[DOUBLE_SHORTEST_DECIMAL_LEN + 1] = ",";	/* the separator, then the value */

	appendStringInfoChar(buf, '{');
	for (int64 i = 0; i < count; i++)
	{
		int			len = x4 != NULL ? float_to_shortest_decimal_bufn(x4[i], num + 1)
			: double_to_shortest_decimal_bufn(x[i], num + 1);

		appendBinaryStringInfo(buf, i > 0 ? num : num + 1, i > 0 ? len + 1 : len);
	}
	appendStringInfoChar(buf, '}');
}

/*
 * Room for the text form's lists (the mean twice and count body values), at
 * most 25 characters a value, asked for at once: a buffer grown by doubling
 * is a new large block at each step, whose pages fault in afresh (glibc
 * maps each one), and pages of the room left unwritten are never touched.
 * Room past what one allocation holds is left to the StringInfo's growth.
 */
static void
reserve_lists(StringInfo buf, int64 d, int64 count)
{
	double		need = 25.0 * (2 * d + count) + 64;

	if (need < (double) (MaxAllocSize - 1 - buf->len))
		enlargeStringInfo(buf, (int) need);
}

Datum
perpca_stats_out(PG_FUNCTION_ARGS)
{
	PerpcaStats *s = PG_GETARG_PERPCA_STATS(0);
	StringInfoData buf;
	TextHeader	h;
	double	   *body;
	int64		count;

	perpca_stats_validate(s);
	header_of(s, &h);
	initStringInfo(&buf);
	appendStringInfo(&buf, "v%lld", (long long) h.version);
	for (int f = 0; f < NFIELDS; f++)
	{
		char		num[DOUBLE_SHORTEST_DECIMAL_LEN];

		if (!text_field_in(f, h.version))
			continue;
		if (f == F_DELTA || f == F_TRACE)
			double_to_shortest_decimal_buf(f == F_DELTA ? h.delta : h.trace, num);
		else
			snprintf(num, sizeof(num), "%lld", (long long) h.f[f]);
		appendStringInfo(&buf, "%s%s", text_fields[f].key, num);
	}
	body = text_body(s, &count);
	reserve_lists(&buf, s->dim, count);
	appendStringInfoString(&buf, " mean=");
	append_list(&buf, PERPCA_STATS_MEAN(s), NULL, s->dim);
	appendStringInfoString(&buf, " mean_lo=");
	append_list(&buf, PERPCA_STATS_MEAN_LO(s), NULL, s->dim);
	appendStringInfo(&buf, " %s", body_keyword(s->form));
	append_list(&buf, body, perpca_stats_float4(s) ? PERPCA_STATS_ROWS4(s) : NULL, count);
	PG_RETURN_CSTRING(buf.data);
}

/*
 * Binary form: version byte, form byte, int32 d, int64 n, for versions 2, 3
 * and 4 the int64 skipped count, for a sketch (version 3) int32 ell and
 * int32 rows, then the doubles; for version 4 then the n x d float4 rows.
 */
static PerpcaStats *
recv_float4(StringInfo msg, int d, int64 n, int64 skipped)
{
	int64		left = msg->len - msg->cursor;
	PerpcaStats *s;
	float	   *rows;

	if (left < (int64) sizeof(double) * 2 * d ||
		n > (left - (int64) sizeof(double) * 2 * d) / ((int64) sizeof(float) * d) ||
		(int64) sizeof(double) * 2 * d + (int64) sizeof(float) * n * d != left)
		invalid_stats("The message length does not match the dimension and row count.");
	s = perpca_stats_alloc_float4(d, n, skipped);
	for (int j = 0; j < 2 * d; j++)
		s->data[j] = pq_getmsgfloat8(msg);
	rows = PERPCA_STATS_ROWS4(s);
	for (int64 i = 0; i < n * d; i++)
		rows[i] = pq_getmsgfloat4(msg);
	perpca_stats_validate(s);
	return s;
}

Datum
perpca_stats_recv(PG_FUNCTION_ARGS)
{
	StringInfo	msg = (StringInfo) PG_GETARG_POINTER(0);
	int			version = pq_getmsgbyte(msg);
	int			form = pq_getmsgbyte(msg);
	int32		d = pq_getmsgint(msg, 4);
	int64		n = pq_getmsgint64(msg);
	int64		skipped;
	int32		ell,
				rows;
	int64		left;
	PerpcaStats *s;

	check_format(version, form);
	skipped = version != PERPCA_STATS_VERSION ? pq_getmsgint64(msg) : 0;
	ell = form == PERPCA_FORM_SKETCH ? pq_getmsgint(msg, 4) : 0;
	rows = form == PERPCA_FORM_SKETCH ? pq_getmsgint(msg, 4) : 0;
	if (d < 1)
		invalid_stats("The dimension must be positive.");
	if (form == PERPCA_FORM_SKETCH)
		perpca_check_sketch_dim(d);
	else
		perpca_check_dense_dim_limit(d, NULL);
	if (form == PERPCA_FORM_SKETCH && (ell < 1 || ell > PERPCA_SKETCH_MAX_ELL || rows < 0 || rows > ell))
		invalid_stats(psprintf("A sketch's ell must be between 1 and %d, its rows between 0 and ell.",
							   PERPCA_SKETCH_MAX_ELL));
	if (skipped < 0 || n < 0)
		invalid_stats("The row counts must not be negative.");
	if (version == PERPCA_STATS_VERSION_FLOAT4)
		PG_RETURN_POINTER(recv_float4(msg, d, n, skipped));
	left = (msg->len - msg->cursor) / (int64) sizeof(double);
	if ((form == PERPCA_FORM_THIN && n > left / d) ||
		perpca_stats_nvalues(form, d, form == PERPCA_FORM_SKETCH ? rows : n) * (int64) sizeof(double) !=
		msg->len - msg->cursor)
		invalid_stats("The message length does not match the dimension and row count.");
	s = perpca_stats_alloc(form, d, n, skipped, ell, rows, true);
	for (int64 i = 0; i < left; i++)
		s->data[i] = pq_getmsgfloat8(msg);
	perpca_stats_validate(s);
	PG_RETURN_POINTER(s);
}

Datum
perpca_stats_send(PG_FUNCTION_ARGS)
{
	PerpcaStats *s = PG_GETARG_PERPCA_STATS(0);
	int64		total;
	StringInfoData buf;

	perpca_stats_validate(s);
	total = perpca_stats_value_count(s);
	pq_begintypsend(&buf);
	pq_sendbyte(&buf, out_version(s));
	pq_sendbyte(&buf, s->form);
	pq_sendint32(&buf, s->dim);
	pq_sendint64(&buf, s->n);
	if (out_version(s) != PERPCA_STATS_VERSION)
		pq_sendint64(&buf, perpca_stats_skipped(s));
	if (s->form == PERPCA_FORM_SKETCH)
	{
		pq_sendint32(&buf, s->ell);
		pq_sendint32(&buf, s->rows);
	}
	for (int64 i = 0; i < total; i++)
		pq_sendfloat8(&buf, s->data[i]);
	for (int64 i = 0; i < rows4_bytes(s) / (int64) sizeof(float); i++)
		pq_sendfloat4(&buf, PERPCA_STATS_ROWS4(s)[i]);
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

/* ------------------------------------------------------------------------
 * Second moments and accessors
 * ------------------------------------------------------------------------
 */

void
perpca_stats_rows4_center(const float *rows, int64 k, int d, double *shift, double *mu)
{
	Assert(k >= 1);
	for (int j = 0; j < d; j++)
	{
		shift[j] = rows[j];
		mu[j] = 0.0;
	}
	/* mu += row - shift, row by row in order, as stats_agg.c's shift_row sums */
	for (int64 i = 0; i < k; i++)
		perpca_stats_rows4_add(rows + i * d, d, shift, mu);
	for (int j = 0; j < d; j++)
		mu[j] = mu[j] / k;
}

/* The centred rows of a float4 thin value (n >= 1) into out: (row - shift) - mu. */
static void
rows4_centred(const PerpcaStats *s, double *restrict out)
{
	int			d = s->dim;
	const float *rows = PERPCA_STATS_ROWS4(s);
	double	   *shift = palloc(sizeof(double) * 2 * d);
	double	   *mu = shift + d;

	perpca_stats_rows4_center(rows, s->n, d, shift, mu);
	for (int64 i = 0; i < s->n; i++)
		for (int j = 0; j < d; j++)
			out[i * d + j] = ((double) rows[i * d + j] - shift[j]) - mu[j];
	pfree(shift);
}

const double *
perpca_stats_thin_rows(const PerpcaStats *s)
{
	double	   *out;

	if (s->form != PERPCA_FORM_THIN)
		return NULL;
	if (!perpca_stats_float4(s))
		return PERPCA_STATS_BODY(s);
	out = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * Max(s->n * s->dim, 1));
	if (s->n > 0)
		rows4_centred(s, out);
	return out;
}

PerpcaStats *
perpca_stats_widen(const PerpcaStats *s)
{
	PerpcaStats *wide;

	if (!perpca_stats_float4(s))
		return (PerpcaStats *) s;
	wide = perpca_stats_alloc(PERPCA_FORM_THIN, s->dim, s->n, perpca_stats_skipped(s), 0, 0, false);
	memcpy(wide->data, s->data, sizeof(double) * 2 * s->dim);	/* mean, mean_lo */
	if (s->n > 0)
		rows4_centred(s, PERPCA_STATS_BODY(wide));
	return wide;
}

void
perpca_stats_offset(const PerpcaStats *s, const double *center, double *out)
{
	for (int j = 0; j < s->dim; j++)
		out[j] = center == NULL ? 0.0 :
			(PERPCA_STATS_MEAN(s)[j] - center[j]) + PERPCA_STATS_MEAN_LO(s)[j];
}

/* out (upper triangle) = M2 / n, from either form. */
static void
scaled_comoment(const PerpcaStats *s, double *out)
{
	int			d = s->dim;
	double		inv = 1.0 / (double) s->n;
	int			rows;
	const double *B = perpca_stats_sketch_rows(s, &rows);

	if (s->form == PERPCA_FORM_THIN || s->form == PERPCA_FORM_SKETCH)
	{
		const double *Y = B ? B : perpca_stats_thin_rows(s);

		memset(out, 0, sizeof(double) * d * d);
		linalg_syrk_upper(d, B ? rows : (int) s->n, inv, Y, out);
		if (Y != B && Y != PERPCA_STATS_BODY(s))
			pfree((void *) Y);
		return;
	}
	for (int64 i = 0, k = 0; i < d; i++)
		for (int64 j = i; j < d; j++)
			out[i * d + j] = PERPCA_STATS_BODY(s)[k++] * inv;
}

void
perpca_stats_moment(const PerpcaStats *s, const double *center, double *out)
{
	Assert(s->n > 0);
	perpca_check_dense_dim_limit(s->dim, "The second-moment matrix of the statistics");
	scaled_comoment(s, out);
	if (center != NULL)
	{
		double	   *delta = palloc(sizeof(double) * s->dim);

		perpca_stats_offset(s, center, delta);
		linalg_syr_upper(s->dim, 1.0, delta, out);
		pfree(delta);
	}
	linalg_symmetrize_upper(s->dim, out);
}

/* The accessors of a value: perpca_count, perpca_skipped (0 for a version 1 value), perpca_dim, perpca_stats_form. */
#define STATS_ACCESSOR(name, result) \
PG_FUNCTION_INFO_V1(name); \
Datum name(PG_FUNCTION_ARGS) { PerpcaStats *s = PG_GETARG_PERPCA_STATS(0); return result; }

STATS_ACCESSOR(perpca_count, Int64GetDatum(s->n))
STATS_ACCESSOR(perpca_skipped, Int64GetDatum(perpca_stats_skipped(s)))
STATS_ACCESSOR(perpca_dim, Int32GetDatum(s->dim))
STATS_ACCESSOR(perpca_stats_form, PointerGetDatum(cstring_to_text(form_name(s->form))))

double
perpca_stats_trace(const PerpcaStats *s)
{
	const double *body = PERPCA_STATS_BODY(s);
	double		sum = 0.0;

	if (s->form == PERPCA_FORM_SKETCH)
		return body[1];
	if (perpca_stats_float4(s))
	{
		const double *Y = perpca_stats_thin_rows(s);

		sum = linalg_dot(s->n * s->dim, Y, Y);
		pfree((void *) Y);
		return sum;
	}
	if (s->form == PERPCA_FORM_THIN)
		return linalg_dot(s->n * s->dim, body, body);
	for (int64 i = 0, k = 0; i < s->dim; k += s->dim - i, i++)
		sum += body[k];
	return sum;
}

/* Mean vector; NULL for a value with no rows. */
Datum
perpca_mean(PG_FUNCTION_ARGS)
{
	PerpcaStats *s = PG_GETARG_PERPCA_STATS(0);
	double	   *mean;

	perpca_stats_validate(s);
	if (s->n == 0)
		PG_RETURN_NULL();
	mean = palloc(sizeof(double) * s->dim);
	for (int j = 0; j < s->dim; j++)
		mean[j] = PERPCA_STATS_MEAN(s)[j] + PERPCA_STATS_MEAN_LO(s)[j];
#ifdef PERPCA_PLANT_OVERFLOW
	mean[s->dim] = 0;			/* planted defect: the sanitizer run must report it */
#endif
	PG_RETURN_ARRAYTYPE_P(perpca_vector_build(mean, s->dim));
}

/* Covariance (1/n) M2, or the uncentered (1/n) sum x x^T; NULL with no rows. */
Datum
perpca_covariance(PG_FUNCTION_ARGS)
{
	PerpcaStats *s = PG_GETARG_PERPCA_STATS(0);
	bool		centered = PG_GETARG_BOOL(1);
	double	   *cov;
	double	   *zero;

	perpca_stats_validate(s);
	if (s->n == 0)
		PG_RETURN_NULL();
	/* before the d x d allocation: a sketch's d may be past what one allocation holds */
	perpca_check_dense_dim_limit(s->dim, "The second-moment matrix of the statistics");
	cov = palloc(sizeof(double) * s->dim * s->dim);
	zero = palloc0(sizeof(double) * s->dim);
#ifdef PERPCA_PLANT_LEAK
	(void) RelationIdGetRelation(TypeRelationId);	/* planted defect: never closed */
#endif
	perpca_stats_moment(s, centered ? NULL : zero, cov);
	PG_RETURN_ARRAYTYPE_P(perpca_matrix_build(cov, s->dim, s->dim));
}

/* ------------------------------------------------------------------------
 * Rows with missing values
 * ------------------------------------------------------------------------
 */

int
perpca_first_nonfinite(const double *x, int d)
{
	int			bad = 0;

	/*
	 * one branch-free pass, then the position if there is one (GCC 12 does
	 * not vectorize this double compare at -O2 on baseline x86-64 either way,
	 * -fopt-info-vec; the float4 one in pgvector_io.c it does, with an int flag)
	 */
	for (int j = 0; j < d; j++)
		bad |= !(fabs(x[j]) <= DBL_MAX);
	if (!bad)
		return -1;
	for (int j = 0; j < d; j++)
		if (!isfinite(x[j]))
			return j;
	return -1;
}

void
perpca_row_element_error(const char *what, int j, int d, bool isnull, double value,
						 const char *hint)
{
	const char *kind = isnull ? "NULL" : isnan(value) ? "NaN" : value > 0 ? "Infinity" : "-Infinity";

	ereport(ERROR,
			(errcode(isnull ? PERPCA_ERRCODE_NULL : PERPCA_ERRCODE_BAD_VALUE),
			 errmsg("%s element %d of %d is %s", what, j + 1, d, kind),
			 errhint("%s", hint)));
}

PerpcaNulls
perpca_nulls_fcinfo_arg(FunctionCallInfo fcinfo, int argno)
{
	text	   *t;
	int			len;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NULL),
				 errmsg("missing must be 'error' or 'skip', not NULL")));
	t = PG_GETARG_TEXT_PP(argno);
	len = VARSIZE_ANY_EXHDR(t);
	if (len == 4 && memcmp(VARDATA_ANY(t), "skip", 4) == 0)
		return PERPCA_NULLS_SKIP;
	if (len == 5 && memcmp(VARDATA_ANY(t), "error", 5) == 0)
		return PERPCA_NULLS_ERROR;
	if (len == 8 && memcmp(VARDATA_ANY(t), "observed", 8) == 0)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_UNSUPPORTED),
				 errmsg("perpca_stats cannot read rows with missing => 'observed'"),
				 errdetail("Statistics are those of complete rows."),
				 errhint("Use perpca_stats(x, 'skip') to leave out rows with a NULL, NaN or infinite element and count them (perpca_skipped).")));
	ereport(ERROR,
			(errcode(PERPCA_ERRCODE_ARGUMENT),
			 errmsg("missing must be 'error' or 'skip', not \"%s\"", text_to_cstring(t))));
	return PERPCA_NULLS_ERROR;	/* keep the compiler quiet */
}

/*
 * The aggregate memory context of a perpca aggregate's support function
 * fname, and in *kind (when not NULL) AggCheckCallContext's kind of call; an
 * error for a call outside an aggregate.
 */
MemoryContext
perpca_agg_context(FunctionCallInfo fcinfo, const char *fname, int *kind)
{
	MemoryContext aggcxt;
	int			k = AggCheckCallContext(fcinfo, &aggcxt);

	if (!k)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_UNSUPPORTED),
				 errmsg("%s called in non-aggregate context", fname),
				 errdetail("It is a support function of a perpca aggregate and cannot be called directly.")));
	if (kind)
		*kind = k;
	return aggcxt;
}

/* The schema of the perpca extension (pg_extension.extnamespace), or InvalidOid. */
Oid
perpca_extension_schema(void)
{
	Oid			ext = get_extension_oid("perpca", true);
	Oid			nsp = InvalidOid;
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;

	if (!OidIsValid(ext))
		return InvalidOid;
	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(ext));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		nsp = ((Form_pg_extension) GETSTRUCT(tup))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return nsp;
}

Oid
stats_type_oid(void)
{
	Oid			nsp = perpca_extension_schema();
	Oid			typid = InvalidOid;

	if (OidIsValid(nsp))
		typid = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum("perpca_stats"),
								ObjectIdGetDatum(nsp));
	if (!OidIsValid(typid))
		elog(ERROR, "type perpca_stats of extension perpca not found");
	return typid;
}
