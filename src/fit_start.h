/*
 * fit_start.h -- starting U of a fit, through the backend (fit_start.c)
 */
#ifndef PERPCA_FIT_START_H
#define PERPCA_FIT_START_H

#include "fit_types.h"

/* The starts' names (the option init's values), in FitInit order. */
extern const char *const fit_init_names[6];

/*
 * U (d x r1) of a start (not FIT_INIT_BEST); exact: solved exactly (the
 * paper's solver starts as 0.1.0 did), else loosely (L-BFGS refines any
 * start).
 */
extern void fit_start_u(FitBackend *be, FitInit how, const FitOptions *opts, bool exact,
						double *U);

/*
 * A hop's start: Ubest (d x r1, orthonormal) rotated to decreasing pooled
 * variance, its m weakest columns replaced by seeded random directions
 * orthogonal to the others (one product).
 */
extern void fit_hop_start(FitBackend *be, const double *Ubest, int m, uint64 *state, double *U);

/*
 * A screened hop's start: as fit_hop_start, the m weakest columns replaced
 * by m consecutive directions among the top m + HOP_CANDIDATES - 1 of the
 * pooled variance Ubest leaves, (I - UU')(sum_i w_i S_i)(I - UU'): each of
 * the HOP_CANDIDATES blocks is scored by one round of the clients' best
 * responses, and the best objective wins (1 + HOP_CANDIDATES round trips
 * plus the subspace iteration).  Returns false (no hop to run) when the
 * directions it would replace lie in a flat cluster and no candidate
 * scores above fbest, Ubest's objective (FLAT_HOP_SPREAD in fit_start.c).
 */
extern bool fit_screened_hop(FitBackend *be, const double *Ubest, int m, double fbest,
							 double *U);

#endif							/* PERPCA_FIT_START_H */
