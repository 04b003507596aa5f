/*
 * fit_span.h -- a fit of thin and sketched clients in the span of their rows
 *
 * Every S_i of a thin or sketched client is yscale Y_i'Y_i + delta_i
 * delta_i' (client_math.h): it vanishes on the orthogonal complement of the
 * span of the stacked rows (each client's Y_i rows and its offset delta_i).
 * When every client of a fit is such, fit_span_enter gives each client its
 * rows' coordinates in an orthonormal basis E (d x p) of that span, so the
 * fit runs at dimension p (at most the m stacked rows) with the same
 * objective; fit_span_lift maps its components back to d (E times them).
 * docs/sketches.md says why the optimum is the same, and when the span is
 * not used.
 */
#ifndef PERPCA_FIT_SPAN_H
#define PERPCA_FIT_SPAN_H

#include "postgres.h"

#include "fit_types.h"
#include "node.h"
#include "row_reader.h"

typedef struct FitSpan FitSpan;

/* perpca.fit_span: off fits every client in d dimensions (a diagnostic). */
extern bool perpca_fit_span;

/* Define perpca.fit_span (from _PG_init). */
extern void fit_span_init(void);

/*
 * Whether a fit with opts may run in the span with its clients' rows left
 * in storage (ClientsRead.rows_stored): the span's options, unscaled (scale
 * 'standard' divides the rows in place).
 */
extern bool fit_span_rows_stored(const FitOptions *opts);

/*
 * For n clients (read into in) whose S_i are set in d dimensions (not yet
 * client_setup; a client whose rows are in storage has Y NULL and reads
 * them from in): when the span applies to them and opts (every client thin
 * or sketched, method 'perpca', no warm start, m well below d, room for
 * every client's n_global + r2_i components), their Y and delta replaced by
 * coordinates in the span and the span returned (its dimension in *p);
 * else NULL and the clients untouched (their rows still in storage).
 */
extern FitSpan *fit_span_enter(FitClient *clients, const ClientInput *in, int n, int d,
							   int n_global, const FitOptions *opts, int *p);

/*
 * The fit's result and the node's local components mapped back to d
 * dimensions (orthonormal again, signs fixed as a fit in d fixes them);
 * node->d and each client's d become the span's d.
 */
extern void fit_span_lift(const FitSpan *span, FitNode *node, FitResult *res);

#endif							/* PERPCA_FIT_SPAN_H */
