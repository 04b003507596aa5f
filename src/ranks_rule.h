/*
 * ranks_rule.h -- perpca_choose_ranks: the pairs of a scan and its settings
 * (ranks.c fits and evaluates them), and the rule that recommends one pair
 * and writes every pair's note (ranks_rule.c)
 */
#ifndef PERPCA_RANKS_RULE_H
#define PERPCA_RANKS_RULE_H

#include "postgres.h"

/* One pair of the grid and its figures. */
typedef struct RankPair
{
	int			g;
	int			l;
	bool		left_out;		/* n_global + n_local >= d */
	double		objective;
	double		train_error;
	double		heldout_error;	/* mean over held-out clients */
	double		heldout_error_samples;	/* mean over held-out rows */
	double		heldout_ratio;	/* explained / total, summed over held-out clients */
	double		heldout_variance;	/* mean total variance of the held-out clients */
	double		theta;			/* NaN without local components */
	int			rounds;
	bool		converged;
	double		seconds;
	int			added;			/* the widening that added it; 0: the starting grid */
	const char *note;			/* why it was or was not recommended */
} RankPair;

/* The scan's settings. */
typedef struct RankScan
{
	double		within;
	double		min_theta;
	double		target;			/* share rule; NaN: error rule */
	int			d;
	double		variance;		/* the held-out clients' mean total variance (set by the rule) */
	bool		quiet;			/* no NOTICE: a recommendation the grid's widening may change */
	int			widenings;		/* how many times ranks.c widened the grid */
	int			max_widenings;	/* the most it widens in one call */
} RankScan;

/* The edges of the grid a recommended pair sits on (ranks_edges), as bits. */
#define RANK_EDGE_GLOBAL_UP		0x01
#define RANK_EDGE_LOCAL_UP		0x02
#define RANK_EDGE_GLOBAL_DOWN	0x04
#define RANK_EDGE_LOCAL_DOWN	0x08

/*
 * The edges of the grid that pair r sits on and beyond which a pair could
 * be measured (RANK_EDGE_ bits; 0: none).
 */
extern int	ranks_edges(const RankPair *pairs, int n, const RankPair *r, int d);

/*
 * Apply the rule to the fitted pairs: returns the index of the recommended
 * pair or -1, sets every pair's note, and raises the NOTICEs that say which
 * way to move the grid.
 */
extern int	ranks_recommend(RankPair *pairs, int n, RankScan *scan);

#endif							/* PERPCA_RANKS_RULE_H */
