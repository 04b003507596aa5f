/*
 * model_bind.h -- what the readers of a stored model (model_functions.c,
 * monitor.c, results.c) share: the per-call-site binding to a model's cached
 * data, the client of a key argument of any type (with the unknown-client
 * rule), the distance between two clients' local subspaces, a record result
 */
#ifndef PERPCA_MODEL_BIND_H
#define PERPCA_MODEL_BIND_H

#include "fmgr.h"

#include "client_key.h"
#include "model_read.h"

/* A call site's binding (fn_extra): the model's data, scratch space, and model_bind.c's own state. */
typedef struct ModelBinding
{
	ModelData  *data;			/* the bound model's data */
	double	   *y;				/* scratch for one row: d */
	double	   *s;				/* r1 + r2max */
	double	   *out;			/* d: a row function's result */
	void	   *too_few;		/* missing.c's count of rows with too few observed coordinates */
	text	   *model;			/* the model name it was bound for */
	MemoryContextCallback release;
	/* the snapshot the binding was last checked under */
	LocalTransactionId lxid;
	TransactionId xmin;
	TransactionId xmax;
	CommandId	curcid;
	/* the client key's type and how it is written (set on first use) */
	Oid			key_type;
	bool		key_is_text;
	bool		key_byval;		/* keys compared as Datums before conversion */
	ClientKeyOut key_out;
	Datum		last_key;		/* the by-value key of client (when set) */
	bool		key_type_checked;	/* against data, at the first unknown key */
	const ModelClient *client;	/* the last client looked up */
} ModelBinding;

/* The binding of this call site (argument 0 the model), checked once per snapshot and whenever the model name changes. */
extern ModelBinding *model_bind(FunctionCallInfo fcinfo, text *model);

/*
 * The client of the key argument (argument 1, text or any type), or NULL for
 * one the model does not know: then an error when unknown_error, else the
 * statement's one NOTICE.
 */
extern const ModelClient *model_bound_client(FunctionCallInfo fcinfo, ModelBinding *b,
											 bool unknown_error);

/* The client of model m (read as model) keyed key as text, or NULL for one it does not know, with the statement's one NOTICE. */
extern const ModelClient *model_client_named(const ModelData *m, const text *model, const char *key);

/*
 * The row x (m->d values, those at the gaps not read) of client c (NULL: one
 * the model does not know) with each gap (obs false) filled as
 * perpca_model_impute fills it (model_functions.c), into filled.
 */
extern void model_impute_row(const ModelData *m, const ModelClient *c, const double *x,
							 const bool *obs, double *filled);

/* The call's client key for a message: the client's stored name, the key itself when passed as text, else NULL. */
extern const char *model_key_name(FunctionCallInfo fcinfo, bool unknown_error);

/* rho = ||P_Va - P_Vc||_F^2 / ((r_a + r_c) / 2) between two clients' local subspaces; G: r2max^2 scratch. */
extern double model_client_distance(const ModelData *m, const ModelClient *a, const ModelClient *c,
									double *G);

/* The record result of a function returning one, from its columns' values and nulls. */
extern Datum model_result_record(FunctionCallInfo fcinfo, Datum *values, bool *nulls);

#endif							/* PERPCA_MODEL_BIND_H */
