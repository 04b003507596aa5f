/*
 * perpca.h -- declarations shared by the perpca source files
 *
 * Files and what they own:
 *   perpca.c            module initialisation (BLAS threading), phase reporting
 *   arrays.c            validating and building float8[] values (vectors, matrices)
 *   stats.c             the perpca_stats type: I/O, send/receive, moments (stats.h)
 *   stats_agg.c         the perpca_stats aggregates: transition, combine, serialize
 *   linalg.c            the only file that calls CBLAS / LAPACKE (linalg.h)
 *   fit.c               the PerPCA algorithm: reading S_i, client step, server step,
 *                       rounds, output and diagnostics (fit.h, fit_internal.h)
 *   fit_start.c         starting points (local PCs, disPCA/Qu, pooled, random, given,
 *                       'best') and the one-shot baselines dispca, cpca, indiv
 *   clients.c           reading a fit's clients with SPI, their checks and S_i,
 *                       shared options and result rows (clients.h)
 *   fit_sql.c           perpca_fit(), perpca_last_fit(): options, start, results
 *   federated_shard.c   perpca_shard_*(): the client steps run on each shard
 *   federated.c         perpca_fit_federated(): the coordinator over libpq (federated.h)
 *   models.c            projection functions on a stored model, read by name and cached
 *   model_store.c       perpca_run_as_owner(): a model's refresh/replace run as its owner (model_store.h)
 *   project.c           projection functions on float8[] arrays
 */
#ifndef PERPCA_H
#define PERPCA_H

#include "postgres.h"
#include "utils/array.h"

/* Largest supported dimension d: a d x d float8 matrix stays well under 1 GB. */
#define PERPCA_MAX_DIM 4096

/* ---- perpca.c ---- */

/* Show a long call's phase in pg_stat_activity.query (printf-style). */
extern void perpca_report_phase(const char *fmt,...) pg_attribute_printf(1, 2);

/* Show the statement again in pg_stat_activity.query (also done at transaction end). */
extern void perpca_restore_activity(void);

/* GUC perpca.progress_rows (0 = off). */
extern int	perpca_progress_rows;

/* ---- arrays.c ---- */

/* Validate a 1-D float8[] without NULLs or non-finite values; return its data. */
extern double *perpca_vector_arg(ArrayType *a, int *dim, const char *what);

/* The same checks except finiteness (for callers that check it while copying). */
extern double *perpca_vector_shape(ArrayType *a, int *dim, const char *what);

/* Validate a 2-D float8[] (rows x cols) without NULLs; return its data (row-major). */
extern double *perpca_matrix_arg(ArrayType *a, int *rows, int *cols, const char *what);

/* Raise the standard error for two different dimensions. */
extern void perpca_dim_mismatch(int expected, int got, const char *what) pg_attribute_noreturn();

/* Raise program_limit_exceeded when d is above PERPCA_MAX_DIM. */
extern void perpca_check_dim_limit(int d);

/* Build float8[] values from C arrays. */
extern ArrayType *perpca_vector_build(const double *x, int n);
extern ArrayType *perpca_matrix_build(const double *x, int rows, int cols);

#endif							/* PERPCA_H */
