/*
 * sketch.h -- Frequent Directions over the centred rows of a group: the
 * state behind perpca_sketch(x, ell) and behind perpca_merge when it meets
 * a sketch (stats_agg.c)
 *
 * The rows sketched are the centred rows in Welford form: adding row x to a
 * group of n rows with mean mu inserts sqrt(n/(n+1)) (x - mu), and merging
 * two groups inserts the other's rows plus sqrt(na nb / n)(mu_a - mu_b);
 * M2 is exactly the sum of the rank-one terms of those rows.  The state
 * keeps them in a buffer of 2 ell rows; a full buffer is shrunk (Liberty
 * 2013; Ghashami, Liberty, Phillips, Woodruff 2016) through the
 * eigendecomposition of its Gram matrix: with lambda_1 >= lambda_2 >= ...
 * its eigenvalues and v_i their right singular vectors, delta_t =
 * lambda_{ell+1}, the buffer becomes the ell rows sqrt(lambda_i) v_i^T for
 * the top ell - s and sqrt(lambda_i - delta_t) v_i^T for the bottom s =
 * perpca_sketch_shrunk_rows(ell) = ceil(ell / 8) (alpha-FD, Desai,
 * Ghashami, Phillips 2016; stats.h), and delta grows by delta_t.  Then
 * 0 <= M2 - B^T B <= delta I always (each shrink leaves out delta_t along
 * the bottom s directions and lambda_i <= delta_t along those past ell),
 * and each shrink removes at least (s + 1) delta_t of trace, so
 * delta <= ||A - A_k||_F^2 / (s + 1 - k) for every k < s + 1.  Merges keep
 * both: the removed trace and delta add up over all the shrinks of all the
 * parts, and a smaller ell only lowers s.
 * A group of n rows has at most n - 1 Welford rows (merges keep that), so a
 * group of at most ell + 1 rows is kept exactly: delta = 0.
 *
 * n, the mean (a reference point plus an offset, the double-double mean of
 * stats_agg.c) and trace(M2) are exact; only M2 is approximated.
 */
#ifndef PERPCA_SKETCH_H
#define PERPCA_SKETCH_H

#include "postgres.h"

#include "stats.h"

typedef struct SketchState
{
	MemoryContext cxt;			/* where the state and its buffers live */
	int			d;
	int			ell;			/* the sketch keeps ell rows; the buffer 2 ell */
	int			nrows;			/* rows in buf */
	int			bufcap;			/* rows buf can hold (grows up to 2 ell) */
	int64		n;				/* rows of the group */
	int64		skipped;		/* rows left out (missing values) */
	double		trace;			/* trace(M2), exactly (no rounding beyond the sums') */
	double		delta;			/* shrunk mass: 0 <= M2 - B'B <= delta I */
	double	   *shift;			/* d: reference point (the first row) */
	double	   *mu;				/* d: mean minus shift */
	double	   *buf;			/* 2 ell x d, row-major: the rows B */
	double	   *work;			/* scratch of a shrink (allocated on first use) */
	int			northo;			/* the first northo rows are a shrink's: orthogonal */
	double	   *onorm;			/* ell: their squared norms */
} SketchState;

/*
 * Check ell for rows of dimension d (22023 for ell < 1, ell > d, ell above
 * PERPCA_SKETCH_MAX_ELL or a buffer above the allocation limit).
 */
extern void sketch_check_ell(int ell, int d);

/* An empty sketch of dimension d in cxt. */
extern SketchState *sketch_create(MemoryContext cxt, int d, int ell);

/* Add one row (d finite values). */
extern void sketch_add_row(SketchState *sk, const double *x);

/* Merge sketch b into a (b does not change); a's ell becomes the smaller. */
extern void sketch_merge(SketchState *a, const SketchState *b);

/*
 * Merge a stored value of any form into the sketch: a sketch's rows, a thin
 * value's centred rows; a dense value's M2 enters as the FD shrink of its
 * eigendecomposition (its top ell eigenpairs as rows sqrt(lambda_i) v_i,
 * the bottom s of them sqrt(lambda_i - lambda_{ell+1}) v_i; delta +=
 * lambda_{ell+1}).
 */
extern void sketch_merge_stats(SketchState *sk, const PerpcaStats *s);

/* The perpca_stats value of the sketch (the state does not change). */
extern PerpcaStats *sketch_to_stats(const SketchState *sk);

/* The state exactly, as bytea (partial aggregation), and back. */
#define SKETCH_STATE_FORMAT 0x53	/* first byte after the varlena header */
extern bytea *sketch_serialize(const SketchState *sk);
extern SketchState *sketch_deserialize(MemoryContext cxt, const bytea *b);

/* Is this serialized state a sketch's (not stats_agg.c's exact state)? */
extern bool sketch_is_serialized(const bytea *b);

#endif							/* PERPCA_SKETCH_H */
