/*
 * ranks_rule.c -- which pair perpca_choose_ranks recommends, and why every
 * pair was or was not recommended (its note)
 *
 * The rule reads the held-out figures of the pairs that ranks.c fitted.  It
 * compares pairs first by their size k = n_global + n_local, then within a
 * size:
 *
 *   size, error rule (the default): the smallest k whose best pair no
 *     larger pair of the grid improves on by more than noise would.  Going
 *     from k to k' > k components, dimensions without structure remove
 *     (k' - k) / (d - k) of the held-out error left at k; a larger pair that
 *     removes more than that plus within x (the held-out clients' mean total
 *     variance) has found structure that the pair of size k misses.
 *   size, share rule (target_explained_ratio): the smallest k with a pair
 *     whose held-out explained ratio reaches the target.
 *   within the size: the pair that explains held-out rows best (the lowest
 *     held-out error; the same order as the held-out explained ratio, as
 *     both are measured about the same centres).
 *   min_theta only annotates: a pair whose theta_est is below it (its
 *     clients' local subspaces are alike) is still recommended when it
 *     explains held-out rows best, and its note says that its global/local
 *     split is uncertain.  Preferring pairs above min_theta picked pairs
 *     that explained a later period worse on real panels
 *     (bench/ranks_bench.py).
 *   no structure: when no pair explains 1.5 times its share (k / d) of the
 *     held-out variance (rows without low-rank structure: any k-dimensional
 *     subspace explains about k / d), the error rule recommends nothing.
 *
 * Every pair's note says which of these decided it.
 */
#include "postgres.h"

#include <limits.h>
#include <math.h>

#include "lib/stringinfo.h"

#include "ranks_rule.h"

/* A pair explains "clearly more" than chance when its ratio is this many times (n_global + n_local) / d. */
#define STRUCTURE_LIFT 1.5

/* Whether p has held-out figures to compare (fitted, finite error). */
static bool
measured(const RankPair *p)
{
	return !p->left_out && isfinite(p->heldout_error);
}

static int
size_of(const RankPair *p)
{
	return p->g + p->l;
}

/* Whether p's clients' local subspaces differ: no local components, or theta_est >= min_theta. */
static bool
separable(const RankPair *p, const RankScan *scan)
{
	return p->l == 0 || (isfinite(p->theta) && p->theta >= scan->min_theta);
}

/* Whether p may answer the rule: always (error rule), its ratio reaches the target (share rule). */
static bool
reaches(const RankPair *p, const RankScan *scan)
{
	return isnan(scan->target) || p->heldout_ratio >= scan->target;
}

/* The pair of size k that fits held-out rows best (among those that reach the target), or -1. */
static int
size_best(const RankPair *pairs, int n, int k, const RankScan *scan)
{
	int			b = -1;

	for (int i = 0; i < n; i++)
	{
		const RankPair *p = &pairs[i];

		if (!measured(p) || size_of(p) != k || !reaches(p, scan))
			continue;
		if (b < 0 || p->heldout_error < pairs[b].heldout_error)
			b = i;
	}
	return b;
}

/*
 * The larger pair that improves on p by the most beyond what noise would
 * remove ((k' - k) / (d - k) of p's error, plus within x variance), or -1
 * when none does.
 */
static int
improver(const RankPair *p, const RankPair *pairs, int n, const RankScan *scan)
{
	int			k = size_of(p),
				r = -1;
	double		most = 0;

	for (int i = 0; i < n; i++)
	{
		const RankPair *q = &pairs[i];
		int			kq = size_of(q);
		double		excess;

		if (!measured(q) || kq <= k)
			continue;
		excess = p->heldout_error - q->heldout_error -
			((double) (kq - k) / (scan->d - k) * p->heldout_error + scan->within * scan->variance);
		if (excess > most)
		{
			most = excess;
			r = i;
		}
	}
	return r;
}

/* The recommended pair: the first size (ascending) that the rule accepts, its pick; or -1. */
static int
chosen(const RankPair *pairs, int n, const RankScan *scan, int lo, int hi)
{
	for (int k = lo; k <= hi; k++)
	{
		int			best = size_best(pairs, n, k, scan);

		if (best < 0)
			continue;
		if (!isnan(scan->target) || improver(&pairs[best], pairs, n, scan) < 0)
			return best;
	}
	return -1;
}

/* ------------------------------------------------------------------------
 * The notes
 * ------------------------------------------------------------------------
 */

/* The note of the recommended pair r. */
static char *
note_recommended(const RankPair *p, const RankScan *scan)
{
	if (isnan(scan->target))
		return psprintf("recommended: the smallest n_global + n_local (%d) that no larger pair improves on by more than noise would (within %g), and of that size it explains held-out rows best",
						size_of(p), scan->within);
	return psprintf("recommended: the smallest n_global + n_local (%d) whose held-out explained ratio reaches %g, and of that size it explains held-out rows best",
					size_of(p), scan->target);
}

/* The note of a pair of the recommended pair r's size. */
static char *
note_same_size(const RankPair *p, const RankPair *r, const RankScan *scan)
{
	if (!reaches(p, scan))
		return psprintf("not recommended: its held-out explained ratio %.4g is below the target %g",
						p->heldout_ratio, scan->target);
	return psprintf("not recommended: (%d, %d) of the same size explains held-out rows better (explained ratio %.4g against %.4g)",
					r->g, r->l, r->heldout_ratio, p->heldout_ratio);
}

/* The note of a pair smaller than the recommended pair. */
static char *
note_smaller(const RankPair *pairs, int n, int i, const RankScan *scan)
{
	const RankPair *p = &pairs[i];
	int			q;

	if (!isnan(scan->target))
		return psprintf("not recommended: its held-out explained ratio %.4g is below the target %g",
						p->heldout_ratio, scan->target);
	q = improver(p, pairs, n, scan);
	if (q < 0)
	{
		const RankPair *b = &pairs[size_best(pairs, n, size_of(p), scan)];

		return psprintf("not recommended: (%d, %d) of the same size explains held-out rows better, and a larger pair improves on that one by more than noise would",
						b->g, b->l);
	}
	return psprintf("not recommended: too small: (%d, %d) removes more of its held-out error than noise would (explained ratio %.4g against %.4g)",
					pairs[q].g, pairs[q].l, pairs[q].heldout_ratio, p->heldout_ratio);
}

/* The note of pair i when the recommendation is r (-1: none). */
static const char *
note_pair(const RankPair *pairs, int n, int i, int r, const RankScan *scan)
{
	const RankPair *p = &pairs[i];
	char	   *why;

	if (p->left_out)
		return p->note;
	if (!measured(p))
		return "not recommended: no held-out figures (the held-out rows have no variance)";
	if (i == r)
		why = note_recommended(p, scan);
	else if (r < 0 && !isnan(scan->target))
		why = psprintf("not recommended: its held-out explained ratio %.4g is below the target %g, as every pair's is",
					   p->heldout_ratio, scan->target);
	else if (r < 0)
		why = psprintf("not recommended: no low-rank structure: it explains %.2f times its share (n_global + n_local) / d of the held-out variance, no pair explains %.1f times",
					   p->heldout_ratio * scan->d / size_of(p), STRUCTURE_LIFT);
	else if (size_of(p) > size_of(&pairs[r]))
		why = psprintf(isnan(scan->target) ?
					   "not recommended: larger than (%d, %d), which it does not improve on by more than noise would (explained ratio %.4g against %.4g)" :
					   "not recommended: larger than (%d, %d), which reaches the target (explained ratio %.4g against %.4g)",
					   pairs[r].g, pairs[r].l, p->heldout_ratio, pairs[r].heldout_ratio);
	else if (size_of(p) == size_of(&pairs[r]))
		why = note_same_size(p, &pairs[r], scan);
	else
		why = note_smaller(pairs, n, i, scan);
	if (!separable(p, scan))
		why = psprintf("%s; theta_est %.3g < min_theta %g: the clients' local subspaces are alike, so its split into global and local parts is uncertain (min_theta only annotates)",
					   why, p->theta, scan->min_theta);
	return why;
}

/* The smallest and largest n_global and n_local of the grid's pairs. */
typedef struct GridBounds
{
	int			gmin,
				gmax,
				lmin,
				lmax;
} GridBounds;

static GridBounds
grid_bounds(const RankPair *pairs, int n)
{
	GridBounds	b = {INT_MAX, -1, INT_MAX, -1};

	for (int i = 0; i < n; i++)
	{
		b.gmin = Min(b.gmin, pairs[i].g);
		b.gmax = Max(b.gmax, pairs[i].g);
		b.lmin = Min(b.lmin, pairs[i].l);
		b.lmax = Max(b.lmax, pairs[i].l);
	}
	return b;
}

/*
 * The edges of the grid (the largest or smallest n_global or n_local of the
 * grid's pairs) that pair r sits on, beyond which a pair was not measured and
 * might be chosen.  Beyond the largest rank of a side, only while a pair
 * there leaves a dimension to measure (one above the largest rank of that
 * side plus the smallest of the other is below d); beyond the smallest, only
 * while it is above 0 and the side has more than one rank.
 */
int
ranks_edges(const RankPair *pairs, int n, const RankPair *r, int d)
{
	GridBounds	b = grid_bounds(pairs, n);
	int			edges = 0;

	if (r->g == b.gmax && b.gmax + 1 + b.lmin < d)
		edges |= RANK_EDGE_GLOBAL_UP;
	if (r->l == b.lmax && b.lmax + 1 + b.gmin < d)
		edges |= RANK_EDGE_LOCAL_UP;
	if (r->g == b.gmin && b.gmin > 0 && b.gmin < b.gmax)
		edges |= RANK_EDGE_GLOBAL_DOWN;
	if (r->l == b.lmin && b.lmin > 0 && b.lmin < b.lmax)
		edges |= RANK_EDGE_LOCAL_DOWN;
	return edges;
}

/*
 * What the recommended pair r's note adds when r sits on an edge of the grid
 * (ranks_edges), or NULL; after the grid was widened as far as one call
 * widens it, the note says so.
 */
static char *
note_edge(const RankPair *pairs, int n, const RankPair *r, const RankScan *scan)
{
	int			edges = ranks_edges(pairs, n, r, scan->d);
	GridBounds	b = grid_bounds(pairs, n);
	StringInfoData buf;

	if (edges == 0)
		return NULL;
	initStringInfo(&buf);
	if (edges & RANK_EDGE_GLOBAL_UP)
		appendStringInfo(&buf, ", global_ranks above %d", b.gmax);
	if (edges & RANK_EDGE_LOCAL_UP)
		appendStringInfo(&buf, ", local_ranks above %d", b.lmax);
	if (edges & RANK_EDGE_GLOBAL_DOWN)
		appendStringInfo(&buf, ", global_ranks below %d", b.gmin);
	if (edges & RANK_EDGE_LOCAL_DOWN)
		appendStringInfo(&buf, ", local_ranks below %d", b.lmin);
	if (scan->widenings >= scan->max_widenings && scan->max_widenings > 0)
		return psprintf("on the edge of the grid after %d widenings (the most one call makes): widen it (%s) and call again, a pair beyond the edge was not measured",
						scan->widenings, buf.data + 2);
	return psprintf("on the edge of the grid: widen it (%s) and call again, a pair beyond the edge was not measured",
					buf.data + 2);
}

/* ------------------------------------------------------------------------
 * The recommendation
 * ------------------------------------------------------------------------
 */

/* The NOTICE when no pair explains clearly more than its share of the dimensions. */
static void
notice_no_structure(double lift, bool share)
{
	ereport(NOTICE,
			(errmsg("perpca_choose_ranks: no low-rank structure: no pair explains more than %.2f times its share of the dimensions of the held-out variance",
					lift),
			 errdetail("For rows without low-rank structure a subspace of k dimensions explains about k/d of held-out variance; a pair must explain %.1f times that to count.",
					   STRUCTURE_LIFT),
			 errhint("%s", share ? "The share rule still picks the smallest pair that reaches the target, but a fit of these data will not summarise them; check the features' units (scale => 'standard')." :
					 "No pair is recommended: a fit of these data will not summarise them; check the features' units (scale => 'standard').")));
}

/* The NOTICE that says which way to move a grid whose answer is at its edge (sizes lo..hi). */
static void
notice_edge(const RankPair *r, const RankScan *scan, int lo, int hi)
{
	if (lo == hi)
		return;					/* one size of pair: no direction to point */
	if (size_of(r) == hi && hi < scan->d - 1)
		ereport(NOTICE,
				(errmsg("perpca_choose_ranks: the recommended pair (%d, %d) is among the largest of the grid",
						r->g, r->l),
				 errhint("Widen the grid toward larger ranks: up to n_global + n_local = %d can be measured.", scan->d - 1)));
	else if (size_of(r) == lo && lo > 1)
		ereport(NOTICE,
				(errmsg("perpca_choose_ranks: the recommended pair (%d, %d) is among the smallest of the grid",
						r->g, r->l),
				 errhint("Narrow the grid toward smaller ranks: a smaller pair may do as well.")));
}

/*
 * Over the measured pairs: the held-out variance into scan, the smallest and
 * largest size into lo and hi (lo > hi: none); returns the largest lift.
 */
static double
measured_range(const RankPair *pairs, int n, RankScan *scan, int *lo, int *hi)
{
	double		lift = 0;

	*lo = INT_MAX;
	*hi = 0;
	scan->variance = 0;
	for (int i = 0; i < n; i++)
	{
		const RankPair *p = &pairs[i];

		if (!measured(p))
			continue;
		scan->variance = Max(scan->variance, p->heldout_variance);
		lift = Max(lift, p->heldout_ratio * scan->d / size_of(p));
		*lo = Min(*lo, size_of(p));
		*hi = Max(*hi, size_of(p));
	}
	return lift;
}

/*
 * Apply the rule; note every pair and say in a NOTICE which way the grid
 * should move when the answer sits at its edge.  Returns the recommended
 * index or -1.
 */
int
ranks_recommend(RankPair *pairs, int n, RankScan *scan)
{
	bool		share = !isnan(scan->target);
	int			lo,
				hi,
				r = -1;
	double		lift = measured_range(pairs, n, scan, &lo, &hi);

	if (lo <= hi && lift < STRUCTURE_LIFT && !scan->quiet)
		notice_no_structure(lift, share);
	if (lo <= hi && (share || lift >= STRUCTURE_LIFT))
		r = chosen(pairs, n, scan, lo, hi);
	if (lo <= hi && share && r < 0 && !scan->quiet)
		ereport(NOTICE,
				(errmsg("perpca_choose_ranks: no pair reaches a held-out explained ratio of %g", scan->target),
				 errhint("Widen the grid toward larger ranks (up to n_global + n_local = %d), or lower target_explained_ratio.",
						 scan->d - 1)));
	for (int i = 0; i < n; i++)
		pairs[i].note = note_pair(pairs, n, i, r, scan);
	if (r >= 0)
	{
		char	   *edge = note_edge(pairs, n, &pairs[r], scan);

		if (edge != NULL)
			pairs[r].note = psprintf("%s; %s", pairs[r].note, edge);
		if (!scan->quiet)
			notice_edge(&pairs[r], scan, lo, hi);
	}
	return r;
}
