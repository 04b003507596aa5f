/*
 * fit_sums.h -- what the layers of a fit above the clients share: the
 * weighted sums' allocation, the per-round trace, the verbose schedule and
 * theta_est (fit_sums.c)
 */
#ifndef PERPCA_FIT_SUMS_H
#define PERPCA_FIT_SUMS_H

#include "fit_types.h"

/* Allocate the sums for d x r1 (zeroed). */
extern FitSums *fit_sums_create(int d, int r1);
extern void fit_sums_zero(FitSums *s, int d, int r1);

/* theta_est = 1 - lambda_max(A / W), A = sum_i w_i V_i V_i' (destroyed); NaN unless any. */
extern double fit_theta(double *A, int d, double W, bool any);

/* Append one row to the trace (solvers), with the products and iterations of sums (or NULL). */
extern void fit_trace(FitDiagnostics *diag, int round, double objective, double gnorm,
					  double kkt, double step, const FitSums *sums);

/* Whether round t gets a verbose NOTICE (1, 2, 5, 10, 20, 50, ...). */
extern bool fit_report_round(int t);

#endif							/* PERPCA_FIT_SUMS_H */
