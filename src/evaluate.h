/*
 * evaluate.h -- the figures of one client's rows against components, from
 * their second moment (evaluate.c): perpca_evaluate and perpca_choose_ranks
 */
#ifndef PERPCA_EVALUATE_H
#define PERPCA_EVALUATE_H

#include "postgres.h"

#include "row_reader.h"

/* The figures of one client. */
typedef struct EvalFigures
{
	double		error;			/* mean squared residual per row */
	double		total;			/* tr M */
	double		global;			/* tr(U M U^T) */
	double		local;			/* tr(V M V^T) */
} EvalFigures;

/* The figures from M (d x d, full) and W = [U; V] (k = r1 + r2 rows, d columns). */
extern EvalFigures evaluate_figures(const double *M, int d, const double *W, int r1, int r2);

#endif							/* PERPCA_EVALUATE_H */
