/*
 * quantiles.h -- upper quantiles of the F and normal distributions (quantiles.c)
 */
#ifndef PERPCA_QUANTILES_H
#define PERPCA_QUANTILES_H

/* The q with P(X > q) = alpha for X ~ F(d1, d2); NaN for invalid arguments. */
extern double quantile_f_upper(double alpha, double d1, double d2);

/* The z with P(Z > z) = alpha for a standard normal Z; NaN for invalid alpha. */
extern double quantile_normal_upper(double alpha);

#endif							/* PERPCA_QUANTILES_H */
