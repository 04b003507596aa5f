/*
 * stats.h -- the perpca_stats type: sufficient statistics of one group
 *
 * A perpca_stats value holds the row count n, the dimension d, the mean
 * and the centered co-moment matrix M2 = sum (x-mean)(x-mean)^T, stored as
 * its packed upper triangle (row-major, d(d+1)/2 values).
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
#define PERPCA_FORM_DENSE 0		/* mean + packed M2 */

typedef struct PerpcaStats
{
	int32		vl_len_;		/* varlena header (do not touch directly) */
	uint8		version;		/* PERPCA_STATS_VERSION */
	uint8		form;			/* PERPCA_FORM_DENSE */
	int16		unused;			/* zero */
	int32		dim;			/* d */
	int64		n;				/* number of rows */
	double		data[FLEXIBLE_ARRAY_MEMBER];	/* mean[d], mean_lo[d], packed M2 */
} PerpcaStats;

#define PERPCA_STATS_PACKED(d)	((int64) (d) * ((d) + 1) / 2)
#define PERPCA_STATS_VALUES(d)	(2 * (int64) (d) + PERPCA_STATS_PACKED(d))
#define PERPCA_STATS_SIZE(d) \
	(offsetof(PerpcaStats, data) + sizeof(double) * PERPCA_STATS_VALUES(d))
#define PERPCA_STATS_MEAN(s)	((s)->data)
#define PERPCA_STATS_MEAN_LO(s)	((s)->data + (s)->dim)
#define PERPCA_STATS_M2(s)		((s)->data + 2 * (s)->dim)

#define DatumGetPerpcaStats(x)	((PerpcaStats *) PG_DETOAST_DATUM(x))
#define PG_GETARG_PERPCA_STATS(n) DatumGetPerpcaStats(PG_GETARG_DATUM(n))

/*
 * Second-moment matrix about a centre c (d x d, full, row-major):
 *   out = M2/n + (mean - c)(mean - c)^T.
 * center == NULL means c = the group's own mean (the covariance); a zero
 * vector gives the uncentered moment (1/n) sum x x^T.  Requires n > 0.
 */
extern void perpca_stats_moment(const PerpcaStats *s, const double *center, double *out);

/* Check a value read from outside (version, dimension, counts, finiteness). */
extern void perpca_stats_validate(const PerpcaStats *s);

#endif							/* PERPCA_STATS_H */
