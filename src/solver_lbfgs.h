/*
 * solver_lbfgs.h -- Riemannian L-BFGS over U (solver => 'lbfgs', solver_lbfgs.c)
 */
#ifndef PERPCA_SOLVER_LBFGS_H
#define PERPCA_SOLVER_LBFGS_H

#include "fit_types.h"

/* L-BFGS from U (updated in place); returns rounds run, sets *converged, *objective, *gnorm. */
extern int	solver_lbfgs(FitBackend *be, const FitOptions *opts, double *U, int rounds,
						 bool *converged, double *objective, double *gnorm, FitDiagnostics *diag);

#endif							/* PERPCA_SOLVER_LBFGS_H */
