/*
 * model_bind.h -- what the readers of a stored model (model_functions.c,
 * monitor.c, results.c) share: the per-call-site binding to a model's cached
 * data, the client of a key argument of any type (with the unknown-client
 * rule), and the distance between two clients' local subspaces
 */
#ifndef PERPCA_MODEL_BIND_H
#define PERPCA_MODEL_BIND_H

#include "fmgr.h"

#include "model_read.h"

typedef struct ModelBinding ModelBinding;

/* The binding of this call site (fn_extra), checked once per snapshot and whenever the model name changes. */
extern ModelBinding *model_bind(FunctionCallInfo fcinfo, text *model);

/* The bound model's data. */
extern const ModelData *model_bound_data(const ModelBinding *b);

/* The binding's scratch space for one row: d doubles returned, r1 + r2max in *s. */
extern double *model_bound_scratch(ModelBinding *b, double **s);

/* A second d doubles of scratch space (a row function's result). */
extern double *model_bound_out(ModelBinding *b);

/* The call site's count of rows with too few observed coordinates (missing.c's missing_too_few). */
extern void **model_bound_too_few(ModelBinding *b);

/*
 * The client of the key argument (argument 1, text or any type), or NULL for
 * one the model does not know: then an error when unknown_error, else the
 * statement's one NOTICE.
 */
extern const ModelClient *model_bound_client(FunctionCallInfo fcinfo, ModelBinding *b,
											 bool unknown_error);

/* rho = ||P_Va - P_Vc||_F^2 / ((r_a + r_c) / 2) between two clients' local subspaces; G: r2max^2 scratch. */
extern double model_client_distance(const ModelData *m, const ModelClient *a, const ModelClient *c,
									double *G);

#endif							/* PERPCA_MODEL_BIND_H */
