/*
 * fit_input.h -- the input of a fit (perpca_fit and the federated shards): the
 * user's (client, perpca_stats [, local rank]) query, its checks, the
 * clients built from it, and the component rows of a result.
 */
#ifndef PERPCA_FIT_INPUT_H
#define PERPCA_FIT_INPUT_H

#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"

#include "node.h"
#include "row_reader.h"
#include "stats.h"

/* qsort and bsearch order of pointers to clients: by key. */
extern int	clients_name_cmp(const void *a, const void *b);

/*
 * Rows in every client, one common dimension within the limit, unique keys,
 * room for n_global + r2_i components; no clients is an error when
 * need_clients.
 */
extern void clients_check(const ClientInput *in, int n, int n_global, bool need_clients);

/*
 * Scale 'standard': every client's statistics divided, in place, by the
 * pooled standard deviations of all of them (scale.h); constant features
 * are left unscaled, flagged in *constant and reported in a NOTICE.
 * Returns the d divisors; NULL (and *constant NULL) for 'none'.
 */
extern double *clients_scale(ClientInput *in, int n, FitScale how, bool **constant);

/* Every client's statistics divided, in place, by the given d divisors. */
extern void clients_scale_by(ClientInput *in, int n, const double *scale);

/* The clients' stats as an array (for scale.c). */
extern PerpcaStats **clients_stats(const ClientInput *in, int n);

/* sum_i n_i mean_i into mean_sum (d, zeroed here); returns sum_i n_i. */
extern double clients_mean_sum(const ClientInput *in, int n, double *mean_sum);

/* The same sum kept exact (d entries; exact_sum.h), for a shard to ship; *rows = sum_i n_i. */
extern struct ExactSum *clients_mean_sum_exact(const ClientInput *in, int n, double *rows);

/*
 * The pooled mean mean_sum / rows (d values, allocated here) when a client
 * is sketched, else NULL: what a model stores as its global mean without
 * merging the clients' statistics (a merge of sketches is a sketch's work).
 */
extern double *clients_pooled_mean(const ClientInput *in, int n, const double *mean_sum, double rows);

/* The center of the S_i: NULL (own means), pooled mean (mean_sum / rows) or zero. */
extern double *clients_center(FitCenter how, const double *mean_sum, double rows, int d);

/*
 * The error for sketched statistics s where func needs exact ones (0A000),
 * with hint saying what to do instead; nothing for exact statistics.
 */
extern void clients_refuse_sketch(const PerpcaStats *s, const char *client, const char *func,
								  const char *hint);

/* The same for every client of in. */
extern void clients_refuse_sketches(const ClientInput *in, int n, const char *func, const char *hint);

/*
 * The bound the clients' sketches put on the fit's objective (node fitted,
 * rU global components in the result): each client's share into *bounds
 * (allocated in cxt, node->n of them, names pointing into in), and the
 * total in the objective's units, N / sum w_i * sum_i w_i bound_i.
 */
extern double clients_sketch_bound(const ClientInput *in, const FitNode *node, int rU,
								   MemoryContext cxt, FitClientBound **bounds);

/* One client from one statistics value (thin, sketched or dense, as the value is): S about center (NULL: its mean). */
extern void clients_one(const PerpcaStats *stats, const double *center, int r1, int r2,
						FitClient *c);

/* The node of these clients: S_i about center, weights 1 or n_i, seeds from their keys. */
extern FitNode *clients_node(ClientInput *in, int n, int n_global, const double *center,
							 const FitOptions *opts);

/*
 * The same node in the span of the clients' rows when the span applies
 * (fit_span.h): then *span is set and the node's d is the span's (lift its
 * result with fit_span_lift); else *span is NULL and the node as above
 * (rows left in storage read into in first: clients_load).
 */
struct FitSpan;
extern FitNode *clients_node_span(ClientInput *in, int n, int n_global, const double *center,
								  const FitOptions *opts, struct FitSpan **span);

/*
 * Append (client, kind, component, pc, variance[, weight]): pc is column j of
 * A (d rows, stride lda); weight when the result has that column (a shard's).
 */
extern void clients_put_component(ReturnSetInfo *rsinfo, const char *client, const char *kind,
								  int component, const double *A, int d, int lda, int j,
								  double variance, double weight);

/* The global rows of a result. */
extern void clients_put_global(ReturnSetInfo *rsinfo, const FitResult *res, int d);

/* Every client's local rows (query order), components numbered from 1 (with its weight: a shard's). */
extern void clients_put_local(ReturnSetInfo *rsinfo, const FitNode *node, const ClientInput *in);

#endif							/* PERPCA_FIT_INPUT_H */
