/*
 * fit_sums.h -- what the layers of a fit above the clients share: the
 * weighted sums' allocation, the per-round trace, the verbose schedule and
 * theta_est (fit_sums.c)
 */
#ifndef PERPCA_FIT_SUMS_H
#define PERPCA_FIT_SUMS_H

#include "fit_types.h"

/* How run r ended, in words: a stall within the tolerance the arithmetic allows is a convergence. */
extern const char *fit_run_end_name(const FitStartReport *r);

/* Allocate the sums for d x r1 (zeroed). */
extern FitSums *fit_sums_create(int d, int r1);
extern void fit_sums_zero(FitSums *s, int d, int r1);

/*
 * The exact sums of the parts (fit_types.h): add entry i of part, or a
 * whole part (scale * x, each product rounded once); fit_sums_round writes
 * their correctly rounded values into the fields of s.
 */
extern void fit_sums_add(FitSums *s, FitSumPart part, int64 i, double x);
extern void fit_sums_add_scaled(FitSums *s, FitSumPart part, double scale, const double *x);
extern void fit_sums_round(FitSums *s);
/* Free sums and their exact accumulators (d x r1 x EXACT_CHUNKS digits each). */
extern void fit_sums_free(FitSums *s);

/*
 * A part's exact sum as an expansion (*layers x the part's size, largest
 * terms first; exact_sum.h) for another node, and such an expansion added in.
 */
extern double *fit_sums_expansion(FitSums *s, FitSumPart part, int *layers);
extern void fit_sums_add_expansion(FitSums *s, FitSumPart part, const double *terms, int layers);

/* theta_est: dimension above which lambda_max is iterated (LOBPCG, relative 1e-9) instead of a dsyevr (d^3) */
#define FIT_THETA_EXACT_DIM 1024

/* theta_est = 1 - lambda_max(A / W), A = sum_i w_i V_i V_i' (destroyed); NaN unless any. */
extern double fit_theta(double *A, int d, double W, bool any);

/* Append one row to the trace (solvers), with the products and iterations of sums (or NULL). */
extern void fit_trace(FitDiagnostics *diag, int round, double objective, double gnorm,
					  double kkt, double step, const FitSums *sums);

/* Whether round t gets a verbose NOTICE (1, 2, 5, 10, 20, 50, ...). */
extern bool fit_report_round(int t);

#endif							/* PERPCA_FIT_SUMS_H */
