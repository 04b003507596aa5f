/*
 * fit_baselines.h -- the one-shot methods dispca, cpca and indiv (fit_baselines.c)
 */
#ifndef PERPCA_FIT_BASELINES_H
#define PERPCA_FIT_BASELINES_H

#include "node.h"

/* Run opts->method (not perpca) on one node: U into res, V_i in the node's clients. */
extern void fit_baseline(FitNode *node, FitBackend *be, const FitOptions *opts, FitResult *res,
						 FitDiagnostics *diag);

#endif							/* PERPCA_FIT_BASELINES_H */
