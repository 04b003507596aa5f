/*
 * solver_lbfgs.h -- Riemannian L-BFGS over U (solver => 'lbfgs', solver_lbfgs.c)
 */
#ifndef PERPCA_SOLVER_LBFGS_H
#define PERPCA_SOLVER_LBFGS_H

#include "fit_types.h"

/* (s, y) pairs kept */
#define LBFGS_MEMORY 10
/* objectives and gradient norms kept for the flat-spectrum rule: 2 windows of 10, + 1 */
#define LBFGS_FLAT_HISTORY 21

/*
 * A run's state at its last U (its pairs, objective and gradient):
 * another call continues it from there without evaluating U again.
 */
typedef struct LbfgsMemory
{
	int			npairs;
	double	   *S[LBFGS_MEMORY];
	double	   *Y[LBFGS_MEMORY];
	double		rho[LBFGS_MEMORY];
	bool		evaluated;		/* f, gnorm and G below hold U's evaluation */
	double		f;
	double		gnorm;
	double	   *G;				/* d x r1 */
	double	   *P;				/* r1 x r1: the preconditioner at U */
	int			seen;			/* iterations in fh and gh (slot t % LBFGS_FLAT_HISTORY) */
	double		fh[LBFGS_FLAT_HISTORY];	/* the objectives and gradient norms of the */
	double		gh[LBFGS_FLAT_HISTORY];	/* last iterations, for the flat-spectrum rule */
} LbfgsMemory;

/* A watch on a run: check is called after each iteration with its U; true stops the run there. */
typedef struct LbfgsWatch
{
	bool		(*check) (void *arg, const double *U, double objective);
	void	   *arg;
} LbfgsWatch;

/*
 * What the L-BFGS search lends a run (its run hook's aid): memory to start
 * from (a run that ended at this U: its pairs) and to leave the run's
 * pairs in, a watch (each may be NULL).
 */
typedef struct LbfgsAid
{
	LbfgsMemory *memory;
	const LbfgsWatch *watch;
} LbfgsAid;

/* Free the pairs and the stored gradient of mem (mem itself stays). */
extern void lbfgs_memory_free(LbfgsMemory *mem);

#endif							/* PERPCA_SOLVER_LBFGS_H */
