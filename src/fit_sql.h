/*
 * fit_sql.h -- what the SQL entry points of fits share (fit_sql.c)
 */
#ifndef PERPCA_FIT_SQL_H
#define PERPCA_FIT_SQL_H

#include "fit_types.h"
#include "utils/tuplestore.h"

/* Keep diag as the last fit of its kind in this session (perpca_last_fit, ..._federated_fit). */
extern void fit_sql_remember(const FitDiagnostics *diag, bool federated);

/* The last fit of a kind, or NULL. */
extern const FitDiagnostics *fit_sql_last(bool federated);

/* A float8 datum, NULL for NaN or infinity (a diagnostic that does not apply). */
extern Datum fit_sql_float(double x, bool *isnull);

/*
 * A fit for a model (model_store.c): query read and fitted with the options
 * in diag->opts; its rows (client, kind, component, pc, variance) into a
 * new tuplestore *rows of *desc, the diagnostics into diag (the session's
 * last fit too).  Returns the fit's memory context, which holds what diag
 * points to: the caller deletes it.
 */
extern MemoryContext fit_sql_model(const char *query, FitDiagnostics *diag, Tuplestorestate **rows,
								   TupleDesc *desc);

#endif							/* PERPCA_FIT_SQL_H */
