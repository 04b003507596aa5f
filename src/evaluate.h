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

/* The types of the columns a query returns, from its plan (not run); *natts set. */
extern Oid *evaluate_query_types(const char *query, int *natts);

/*
 * A query of rows (any form of row_reader.h, aggregated under mode) or
 * statistics (client, perpca_stats) wrapped into one returning (client text,
 * stats perpca_stats), one row per client, every name qualified with
 * perpca's schema; what names the query in errors.
 */
extern char *evaluate_stats_query(const char *query, const char *what, PerpcaMissing mode);

#endif							/* PERPCA_EVALUATE_H */
