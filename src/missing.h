/*
 * missing.h -- rows with missing coordinates on a stored model (missing.c)
 */
#ifndef PERPCA_MISSING_H
#define PERPCA_MISSING_H

#include "postgres.h"

#include "fmgr.h"
#include "utils/array.h"

#include "model_read.h"
#include "row_reader.h"

/*
 * The missing argument argno of a row function ('error', 'skip' or
 * 'observed'; 'error' when the call has no such argument).
 */
extern PerpcaMissing missing_arg(FunctionCallInfo fcinfo, int argno);

/*
 * Read the row x (its shape checked; *d its dimension): *x points at its
 * values (in place for a complete row, else a palloc'd copy with 0 at the
 * gaps) and *obs says which are observed (NULL: all of them).  Returns the
 * number observed.  Under 'error' a NULL, NaN or infinite element is an
 * error naming it (under 'skip' the caller returns NULL for such a row).
 */
extern int	missing_read_row(ArrayType *a, PerpcaMissing mode, int *d, const double **x,
							 const bool **obs);

/* The key of the client whose row a call reads (NULL: not known), asked for only when the row is in error. */
typedef const char *(*MissingRowClient) (FunctionCallInfo fcinfo);

/*
 * missing_read_row for a row function whose call names a client: under
 * 'error' the error names the client (client(fcinfo); client NULL: none)
 * and its hint is hint (the options the calling function takes).
 */
extern int	missing_read_client_row(FunctionCallInfo fcinfo, ArrayType *a, PerpcaMissing mode,
									MissingRowClient client, const char *hint, int *d,
									const double **x, const bool **obs);

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

/* Count a row with gaps left out under missing => 'skip' (NULL), reported the same way. */
extern void missing_skip_row(FunctionCallInfo fcinfo, void **slot);

/* A float8[] of the d values x with NULL where obs is false. */
extern ArrayType *missing_build_masked(const double *x, const bool *obs, int d);

#endif							/* PERPCA_MISSING_H */
