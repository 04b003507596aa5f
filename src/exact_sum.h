/*
 * exact_sum.h -- sums of doubles that do not depend on the order of the
 * terms (exact_sum.c)
 *
 * A long accumulator per entry holds the exact sum of everything added to
 * it, whatever the order or grouping; its value is that sum correctly
 * rounded.  A node's sum leaves as an expansion: a few doubles whose exact
 * sum is the accumulator's, so another node adds it in without loss.  The
 * fit's sums over clients run through it (fit_sums.c), so a fit on one
 * node and a federated fit over any grouping of the same clients into
 * shards get the same bits.
 */
#ifndef PERPCA_EXACT_SUM_H
#define PERPCA_EXACT_SUM_H

#include "postgres.h"

/* 32-bit digits from 2^-1074 up, two to spare for carries: every finite double fits. */
#define EXACT_CHUNKS 67

typedef struct ExactSum
{
	int64		n;				/* entries */
	int64	   *chunk;			/* n x EXACT_CHUNKS digits (signed, not yet carried) */
	double	   *special;		/* n: the sum of the non-finite terms (Inf, NaN), else 0 */
	bool		any_special;
} ExactSum;

/* n entries, all zero. */
extern ExactSum *exact_sum_create(int64 n);
extern void exact_sum_zero(ExactSum *s);
extern void exact_sum_free(ExactSum *s);

/* Entry i += x, exactly. */
extern void exact_sum_add(ExactSum *s, int64 i, double x);

/* Entries from, from + 1, ... += x[0 .. n - 1] (times scale, each product rounded once). */
extern void exact_sum_add_scaled(ExactSum *s, int64 from, int64 n, double scale, const double *x);

/* Entry i, correctly rounded to a double. */
extern double exact_sum_value(ExactSum *s, int64 i);

/* Entries from .. from + n - 1, correctly rounded, into out. */
extern void exact_sum_values(ExactSum *s, int64 from, int64 n, double *out);

/*
 * The entries from .. from + n - 1 as layers of an expansion: out[k * n + j]
 * is the k-th term of entry from + j (0 past its last), largest first, and
 * the terms of an entry add up exactly to it.  out holds max_layers * n;
 * returns the layers used (at least 1).  The accumulator keeps its value.
 */
extern int	exact_sum_expansion(ExactSum *s, int64 from, int64 n, double *out, int max_layers);

/* Add the layers of an expansion (layers x n, as exact_sum_expansion writes it) into entries from .. */
extern void exact_sum_add_expansion(ExactSum *s, int64 from, int64 n, const double *terms,
									int layers);

/* Layers an expansion of any entry may need (about 2100 bits / 53). */
#define EXACT_MAX_LAYERS 40

#endif							/* PERPCA_EXACT_SUM_H */
