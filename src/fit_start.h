/*
 * fit_start.h -- starting U of a fit, through the backend (fit_start.c)
 */
#ifndef PERPCA_FIT_START_H
#define PERPCA_FIT_START_H

#include "fit_types.h"

/* U (d x r1) of a start (not FIT_INIT_BEST). */
extern void fit_start_u(FitBackend *be, FitInit how, const FitOptions *opts, double *U);

/* Top r eigenvectors of sum_i w_i S_i (subspace iteration through be->apply) into U (d x r). */
extern void fit_pooled_top(FitBackend *be, int r, double *U, double *values, bool exact);

/* Top m eigenvectors of (I - UU')(sum_i w_i S_i)(I - UU') (loose) into Z (d x m), values (m) if not NULL. */
extern void fit_residual_top(FitBackend *be, const double *U, int m, double *Z, double *values);

#endif							/* PERPCA_FIT_START_H */
