/*
 * fit.h -- one fit engine for every entry point (perpca_fit, perpca_train,
 * perpca_refresh, perpca_fit_federated and the shard functions)
 *
 * Problem (paper, problem (problem)): client matrices S_i (d x d), weights
 * w_i; find U (d x r1) and V_i (d x r2_i), [U, V_i] orthonormal, maximizing
 * sum_i w_i 1/2 [tr(U'S_iU) + tr(V_i'S_iV_i)] / sum_i w_i.
 *
 * Layers, each on top of the previous one, data flowing one way:
 *   eigen.c          eigensolvers over double arrays: exact, subspace iteration, LOBPCG
 *   client_math.c    what one client computes (paper step, best response)
 *   node.c           the clients on this server, as weighted sums
 *   FitBackend       where the node operations run: node.c directly (local)
 *                    or on shards over libpq (federated.c) -- same sums
 *   solver_paper.c   the paper's Algorithm 2: rounds of client steps + server step
 *   solver_lbfgs.c   Riemannian L-BFGS over U on the Grassmannian, best responses
 *   fit_start.c      starting U: disPCA, Qu, pooled, random, given; hop starts
 *   fit_search.c     the search: starts and hops x solver, basins, the best start
 *   fit.c            the solver table; one fit: the search, the output, its diagnostics
 *   fit_options.c    options parsed once, with one set of defaults
 *   fit_sums.c       the sums, the trace and theta_est that the layers share
 * Headers: fit_types.h holds the types every layer shares (options, sums,
 * backend, diagnostics) and sits below them all; each layer's functions are
 * in its own header (fit_sums.h, fit_start.h, solver_paper.h, solver_lbfgs.h,
 * fit_search.h, fit.h), so an include never runs back up the layers.
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
