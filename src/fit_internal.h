/*
 * fit_internal.h -- what fit.c and fit_start.c share beyond fit.h
 *
 * Not part of the fit API: only the two files of the PerPCA engine include it.
 */
#ifndef PERPCA_FIT_INTERNAL_H
#define PERPCA_FIT_INTERNAL_H

#include "fit.h"

/* ---- fit.c ---- */

/* Fill an m x n block (stride ld) with standard normal draws (splitmix64 state). */
extern void fit_fill_gaussian(uint64 *state, int m, int n, double *A, int ld);

/* A (d x d) += alpha S_i, forming S_i from a thin client once. */
extern void fit_client_dense(const FitProblem *p, const FitClient *c, double alpha, double *A);

/* Run up to `rounds` rounds from the current state; return how many ran. */
extern int	fit_run_rounds(FitProblem *p, const FitOptions *opts, int rounds, bool report,
						   bool *converged);

/* fit_client_feasible for every client. */
extern void fit_make_feasible(FitProblem *p);

/* ---- fit_start.c ---- */

/* Set U and every V_i to the start of opts->init; return the rounds already run. */
extern int	fit_start(FitProblem *p, const FitOptions *opts, bool *converged);

/* The one-shot baselines (results in p->U and clients[i].W, as fit_run leaves them). */
extern void fit_dispca(FitProblem *p);
extern void fit_cpca(FitProblem *p, int n_local);
extern void fit_indiv(FitProblem *p);

#endif							/* PERPCA_FIT_INTERNAL_H */
