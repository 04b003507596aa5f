/*
 * missing.h -- rows with missing coordinates on a stored model (missing.c)
 */
#ifndef PERPCA_MISSING_H
#define PERPCA_MISSING_H

#include "postgres.h"

#include "fmgr.h"
#include "utils/array.h"

#include "model_read.h"

typedef enum MissingMode
{
	MISSING_ERROR,				/* a NULL, NaN or infinite element is an error */
	MISSING_OBSERVED			/* the row is scored on its observed coordinates */
} MissingMode;

/* The missing argument argno ('error' or 'observed'; 'error' when the call has no such argument). */
extern MissingMode missing_arg(FunctionCallInfo fcinfo, int argno);

/*
 * Read the row x (its shape checked; *d its dimension): *x points at its
 * values (in place for a complete row, else a palloc'd copy with 0 at the
 * gaps) and *obs says which are observed (NULL: all of them).  Returns the
 * number observed.  Under MISSING_ERROR a NULL, NaN or infinite element is
 * an error naming it.
 */
extern int	missing_read_row(ArrayType *a, MissingMode mode, int *d, const double **x,
							 const bool **obs);

/*
 * The posterior mean z (r1 + r2 values, r2 = 0 for c NULL) of the scores of
 * y (standardized units; the values where obs is false are not read; obs
 * NULL: all observed) under
 * the model's probabilistic PCA form for client c.
 */
extern void missing_posterior(const ModelData *m, const ModelClient *c, const double *y,
							  const bool *obs, double *z);

/*
 * Count a row that has fewer observed coordinates than the rank (its result
 * is NULL); the call site's count is reported in one NOTICE when its query
 * ends.  *slot is the call site's counter (NULL at first).
 */
extern void missing_too_few(FunctionCallInfo fcinfo, void **slot, int rank);

/* A float8[] of the d values x with NULL where obs is false. */
extern ArrayType *missing_build_masked(const double *x, const bool *obs, int d);

#endif							/* PERPCA_MISSING_H */
