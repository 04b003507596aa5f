/*
 * scale.h -- feature scaling of a fit (scale => 'standard'), from statistics
 *
 * The divisor of feature j is its pooled standard deviation: the square
 * root of the j-th diagonal entry of the covariance of all rows of all
 * clients together, about their common mean, divided by the rows N (ddof 0,
 * as sklearn's StandardScaler).  It comes from the statistics alone:
 *   N var_j = sum_i [ M2_i,jj + n_i (mean_i,j - mean_j)^2 ].
 * A feature whose standard deviation is at most SCALE_CONSTANT_RELATIVE
 * times its root mean square sqrt(mean_j^2 + var_j) (a constant, or zero,
 * feature) keeps divisor 1 and is reported.
 *
 * Scaling a statistics value by the divisors s (D = diag(s)) gives the
 * statistics of the rows D^-1 x: mean D^-1 mean, M2 D^-1 M2 D^-1 (thin
 * rows D^-1 y).
 */
#ifndef PERPCA_SCALE_H
#define PERPCA_SCALE_H

#include "postgres.h"

#include "stats.h"

/* std_j <= this x rms_j: a constant feature, left unscaled. */
#define SCALE_CONSTANT_RELATIVE 1e-12

/*
 * The divisors of n statistics values of dimension d pooled together into
 * scale (d); constant[j] is set for the features left at 1 (constant may be
 * NULL).  Returns the number of constant features.
 */
extern int	scale_factors(PerpcaStats *const *stats, int n, int d, double *scale, bool *constant);

/*
 * The same in two steps, for statistics spread over shards: each adds
 * sum_i [M2_i,jj + n_i (mean_i,j - mean_j)^2] of its values about the pooled
 * mean into sums; then the divisors from the sums of all, the mean and the rows.
 */
extern void scale_pooled_sums(PerpcaStats *const *stats, int n, int d, const double *mean,
							  double *sums);
extern int	scale_finish(const double *sums, const double *mean, double rows, int d,
						 double *scale, bool *constant);

/* Divide the features of a statistics value by scale, in place (a private copy). */
extern void scale_stats_inplace(PerpcaStats *s, const double *scale);

/* A NOTICE naming the constant features (1-based), if any. */
extern void scale_report_constant(const bool *constant, int d);

/* The d divisors as float8[] and the 1-based constant features as int[]. */
extern void scale_arrays(const double *scale, const bool *constant, int d, Datum *factors,
						 Datum *constant_features);

/*
 * The record (scale_factors float8[], constant_features int[]) of the
 * calling function: the d divisors and the 1-based constant features, or
 * two NULLs when scale is NULL (unscaled).
 */
extern Datum scale_record(FunctionCallInfo fcinfo, const double *scale, const bool *constant, int d);

#endif							/* PERPCA_SCALE_H */
