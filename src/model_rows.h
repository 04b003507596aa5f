/*
 * model_rows.h -- what the row-wise model functions of model_functions.c share with
 * the other readers of a model (monitor.c, results.c): the per-call-site
 * binding to a model's cached data, the client of a key argument of any
 * type (with the unknown-client rule), and the distance between two
 * clients' local subspaces
 */
#ifndef PERPCA_MODEL_ROWS_H
#define PERPCA_MODEL_ROWS_H

#include "fmgr.h"

#include "model_read.h"

typedef struct ModelBinding ModelBinding;

/* The binding of this call site (fn_extra), checked once per snapshot and whenever the model name changes. */
extern ModelBinding *model_bind(FunctionCallInfo fcinfo, text *model);

/* The bound model's data. */
extern const ModelData *model_bound_data(const ModelBinding *b);

/* The binding's scratch space for one row: d doubles returned, r1 + r2max in *s. */
extern double *model_bound_scratch(ModelBinding *b, double **s);

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

/* Features listed by perpca_component_info's top_features. */
#define COMPONENT_TOP_FEATURES 3

/* "name +0.52, name -0.41, ..." for the top features of a component w (d) by |loading| (results.c). */
extern char *model_top_features(const ModelData *m, const double *w, int top);

#endif							/* PERPCA_MODEL_ROWS_H */
