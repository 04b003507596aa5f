/*
 * solver_lbfgs.h -- Riemannian L-BFGS over U (solver => 'lbfgs', solver_lbfgs.c)
 */
#ifndef PERPCA_SOLVER_LBFGS_H
#define PERPCA_SOLVER_LBFGS_H

#include "fit_types.h"

/* (s, y) pairs kept */
#define LBFGS_MEMORY 10

/* The pairs of a run at its last U: another call continues it from there. */
typedef struct LbfgsMemory
{
	int			npairs;
	double	   *S[LBFGS_MEMORY];
	double	   *Y[LBFGS_MEMORY];
	double		rho[LBFGS_MEMORY];
} LbfgsMemory;

/*
 * L-BFGS from U (updated in place); returns rounds run, sets *converged,
 * *objective, *gnorm.  With mem, starts from its pairs (a run that ended at
 * this U) and leaves the run's pairs in it.
 */
extern int	solver_lbfgs(FitBackend *be, const FitOptions *opts, double *U, int rounds,
						 bool *converged, double *objective, double *gnorm, FitDiagnostics *diag,
						 LbfgsMemory *mem);

/* Free the pairs of mem (mem itself stays). */
extern void lbfgs_memory_free(LbfgsMemory *mem);

#endif							/* PERPCA_SOLVER_LBFGS_H */
