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
 */
#ifndef PERPCA_STATS_H
#define PERPCA_STATS_H

#include "postgres.h"
#include "fmgr.h"

#define PERPCA_STATS_VERSION 1	/* format byte of the on-disk representation */
#define PERPCA_FORM_DENSE 0		/* mean, mean_lo, packed M2 */
#define PERPCA_FORM_THIN 1		/* mean, mean_lo, n centred rows */

typedef struct PerpcaStats
{
	int32		vl_len_;		/* varlena header (do not touch directly) */
	uint8		version;		/* PERPCA_STATS_VERSION */
	uint8		form;			/* PERPCA_FORM_DENSE or PERPCA_FORM_THIN */
	int16		unused;			/* zero */
	int32		dim;			/* d */
	int64		n;				/* number of rows */
	double		data[FLEXIBLE_ARRAY_MEMBER];	/* mean[d], mean_lo[d], body */
} PerpcaStats;

/* The most rows a thin value holds: thin while n d < d (d + 1) / 2. */
#define PERPCA_STATS_THIN_MAX(d)	((d) / 2)
#define PERPCA_STATS_PACKED(d)	((int64) (d) * ((d) + 1) / 2)
#define PERPCA_STATS_MEAN(s)	((s)->data)
#define PERPCA_STATS_MEAN_LO(s)	((s)->data + (s)->dim)
#define PERPCA_STATS_BODY(s)	((s)->data + 2 * (s)->dim)	/* packed M2 or rows */

#define DatumGetPerpcaStats(x)	((PerpcaStats *) PG_DETOAST_DATUM(x))
#define PG_GETARG_PERPCA_STATS(n) DatumGetPerpcaStats(PG_GETARG_DATUM(n))

/* Number of doubles after the header for a value of this form, d and n. */
static inline int64
perpca_stats_nvalues(int form, int d, int64 n)
{
	return 2 * (int64) d + (form == PERPCA_FORM_THIN ? n * d : PERPCA_STATS_PACKED(d));
}

/* Thin form: the n x d rows centred at the mean; NULL for a dense value. */
static inline const double *
perpca_stats_thin_rows(const PerpcaStats *s)
{
	return s->form == PERPCA_FORM_THIN ? PERPCA_STATS_BODY(s) : NULL;
}

/* Allocate a zeroed value (errors if it would exceed the allocation limit). */
extern PerpcaStats *perpca_stats_alloc(int form, int d, int64 n);

/* Reject format versions and forms this build does not know. */
extern void perpca_stats_check_version(const PerpcaStats *s);

/* Check a value read from outside (version, dimension, counts, finiteness). */
extern void perpca_stats_validate(const PerpcaStats *s);

/*
 * Second-moment matrix about a centre c (d x d, full, row-major):
 *   out = M2/n + (mean - c)(mean - c)^T.
 * center == NULL means c = the group's own mean (the covariance); a zero
 * vector gives the uncentered moment (1/n) sum x x^T.  Requires n > 0.
 */
extern void perpca_stats_moment(const PerpcaStats *s, const double *center, double *out);

/* mean - c, computed from the double-double mean (d values into out). */
extern void perpca_stats_offset(const PerpcaStats *s, const double *center, double *out);

/*
 * stats_agg.c's transition for rows of other types (perpca_vector's vector and
 * halfvec): the state for a row of dimension d (argument 0 of the call, or a
 * new one), a buffer of d doubles in it to convert the row into, and the
 * addition of that row -- what perpca_stats(float8[]) does with a row it has
 * read, so both give the same bits for the same numbers.
 */
typedef struct StatsState StatsState;
extern StatsState *perpca_stats_accum_state(FunctionCallInfo fcinfo, int d);
extern double *perpca_stats_accum_scratch(StatsState *st);
extern void perpca_stats_accum_add(StatsState *st, const double *x);

#endif							/* PERPCA_STATS_H */
