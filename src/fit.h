/*
 * fit.h -- one fit engine for every entry point (perpca_fit, perpca_train,
 * perpca_refresh, perpca_fit_federated and the shard functions)
 *
 * Problem (paper, problem (problem)): client matrices S_i (d x d), weights
 * w_i; find U (d x r1) and V_i (d x r2_i), [U, V_i] orthonormal, maximizing
 * sum_i w_i 1/2 [tr(U'S_iU) + tr(V_i'S_iV_i)] / sum_i w_i.
 *
 * Layers, each on top of the previous one, data flowing one way (the file
 * map in perpca.h says what each holds): eigen.c, client_math.c (one
 * client), node.c (the clients of this server), FitBackend (node.c, or
 * shards over libpq: federated.c), solver_*.c, fit_start.c, fit_search.c,
 * fit.c; beside them fit_options.c and fit_sums.c.  fit_types.h holds the
 * types every layer shares and sits below them all; each layer's functions
 * are in its own header, so an include never runs back up the layers.
 * Only U (d x r1) and d x r1 sums cross the backend in a round.
 */
#ifndef PERPCA_FIT_H
#define PERPCA_FIT_H

#include "fit_types.h"

/* The solver table (fit.c): opts->solver is a row; the first is the default. */
extern const FitSolverDef fit_solvers[];
extern const int fit_nsolvers;

/* Run the PerPCA method of opts on be: starts, solver, final U; V_i left in the nodes. */
extern void fit_run(FitBackend *be, const FitOptions *opts, FitResult *res, FitDiagnostics *diag);

/* res->U <- res->U Q, Q the eigenvectors of gram / W (destroyed); variances into res. */
extern void fit_order_global(FitBackend *be, double *gram, FitResult *res);

#endif							/* PERPCA_FIT_H */
