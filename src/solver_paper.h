/*
 * solver_paper.h -- the paper's Algorithm 2 (solver => 'paper', solver_paper.c)
 */
#ifndef PERPCA_SOLVER_PAPER_H
#define PERPCA_SOLVER_PAPER_H

#include "fit_types.h"

/* Paper rounds from U (updated in place); returns rounds run, sets *converged, *step. */
extern int	solver_paper(FitBackend *be, const FitOptions *opts, double *U, int rounds,
						 double *step, bool *converged, double *objective, FitDiagnostics *diag);

/* Its hooks in the solver table (fit.c; FitSolverDef in fit_types.h). */
extern void solver_paper_start(FitBackend *be, const double *U, FitInit how);
extern int	solver_paper_run(FitBackend *be, const FitOptions *opts, double *U, int rounds,
							 FitDiagnostics *diag, FitStartReport *rep, void *aid);

#endif							/* PERPCA_SOLVER_PAPER_H */
