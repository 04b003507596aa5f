/*
 * solver_paper.h -- the paper's Algorithm 2 (solver => 'paper', solver_paper.c)
 */
#ifndef PERPCA_SOLVER_PAPER_H
#define PERPCA_SOLVER_PAPER_H

#include "fit_types.h"

/* Paper rounds from U (updated in place); returns rounds run, sets *converged, *step. */
extern int	solver_paper(FitBackend *be, const FitOptions *opts, double *U, int rounds,
						 double *step, bool *converged, double *objective, FitDiagnostics *diag);

#endif							/* PERPCA_SOLVER_PAPER_H */
