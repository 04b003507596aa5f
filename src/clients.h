/*
 * clients.h -- reading the clients of a fit (perpca_fit and the federated
 * shards): options, the user's (client, perpca_stats [, local rank]) query,
 * the checks on it, each client's S_i, and the component rows of a result.
 */
#ifndef PERPCA_CLIENTS_H
#define PERPCA_CLIENTS_H

#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"

#include "fit.h"
#include "stats.h"

/* One row of the user's query. */
typedef struct ClientInput
{
	char	   *name;
	PerpcaStats *stats;
	int			r2;				/* local components of this client */
} ClientInput;

/* Valid values of the options both perpca_fit and perpca_fit_federated take. */
extern const char *const clients_update_names[2];
extern const char *const clients_retraction_names[2];
extern const char *const clients_center_names[3];
extern const char *const clients_weights_names[2];

/* ---- options ---- */

/* Raise null_value_not_allowed for a NULL option. */
extern void clients_null_option(const char *option) pg_attribute_noreturn();

/* Index of value among names, or invalid_parameter_value listing the valid values. */
extern int	clients_choice(const char *value, const char *option, const char *const *names,
						   int nnames);

/* A non-NULL text argument. */
extern char *clients_text_arg(FunctionCallInfo fcinfo, int argno, const char *option);

/* A non-NULL text argument that must be one of names; returns its index. */
extern int	clients_choice_arg(FunctionCallInfo fcinfo, int argno, const char *option,
							   const char *const *names, int nnames);

/* A non-NULL int4 argument that must be >= min. */
extern int	clients_int_arg(FunctionCallInfo fcinfo, int argno, const char *option, int min);

/* A non-NULL, finite, non-negative float8 argument. */
extern double clients_nonnegative_arg(FunctionCallInfo fcinfo, int argno, const char *option);

/* The step argument: NULL gives 0 (derive it), else a finite number > 0. */
extern double clients_step_arg(FunctionCallInfo fcinfo, int argno);

/* ---- the query ---- */

/* Run query through a cursor; the clients, copied into cxt, and their number. */
extern ClientInput *clients_read(FunctionCallInfo fcinfo, const char *query, int n_local,
								 MemoryContext cxt, int *nclients);

/* One common dimension, rows in every client, room for n_global + r2_i components. */
extern void clients_check(const ClientInput *in, int n, int n_global);

/* sum_i n_i mean_i into mean_sum (d, zeroed here); returns sum_i n_i. */
extern double clients_mean_sum(const ClientInput *in, int n, double *mean_sum);

/* Each client's S_i about centre (NULL: its own mean), weight n_i or 1 (unnormalized). */
extern FitClient *clients_build(const ClientInput *in, int n, const double *centre,
								bool sample_weights);

/* ---- result rows ---- */

/* Append (client, kind, component, pc, variance): pc is column j of A (d rows, stride lda). */
extern void clients_put_component(ReturnSetInfo *rsinfo, const char *client, const char *kind,
								  int component, const double *A, int d, int lda, int j,
								  double variance);

/* Append every client's local rows (query order), components numbered from 1. */
extern void clients_put_local(ReturnSetInfo *rsinfo, const FitProblem *p, const ClientInput *in);

#endif							/* PERPCA_CLIENTS_H */
