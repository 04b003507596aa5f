/*
 * fit_search.c -- the search of one fit: starts, hops, the basins it has
 * found, and when it stops (see fit_search.h)
 *
 * init 'best' runs several starts and keeps the best objective.  L-BFGS:
 * each start to a screening tolerance, then hops from the best optimum
 * (its weakest global directions replaced), a watch that stops a run as
 * soon as it comes into a basin found before, and the winner on to the
 * tolerance.  The probe search (the paper's solver): a short probe of each
 * start, then the chosen one from the beginning, as 0.1.0 did.  A solver
 * (its row of fit.c's table) names its search and lends it its hooks; the
 * starts are fit_start.c's; fit.c makes the output of what the search
 * leaves.
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "fit_search.h"
#include "fit_start.h"
#include "fit_sums.h"
#include "linalg.h"
#include "solver_lbfgs.h"

/* Rounds of each candidate start that the probe search's init 'best' probes. */
#define PROBE_ROUNDS 10
/* L-BFGS init 'best': starts and hops run to this gradient norm (/ lambda_max), the best then on to the tolerance. */
#define SCREEN_TOLERANCE 1e-6
/* Relative gain of the objective that counts as a better optimum (not rounding). */
#define HOP_GAIN 1e-10
/* Projector distance beyond which a hop's optimum is another basin. */
#define HOP_BASIN 1e-2
/* Projector distance to a known optimum within which a run is in its basin and stops. */
#define BASIN_ENTER 0.25
/*
 * ... or within BASIN_NEAR, coming nearer, and below its objective by at
 * most BASIN_NEAR_GAP (relative): on a flat spectrum a run comes back to a
 * known optimum slowly, its objective already close while U still moves.
 */
#define BASIN_NEAR 1.0
#define BASIN_NEAR_GAP 1e-4
/* Hops in a row that come back into known basins before the search stops (the landscape is covered). */
#define HOP_KNOWN 3
/* Weakest global directions a hop replaces. */
#define HOP_COLUMNS 2
/* Fewest rounds a hop may run (its budget is otherwise the slowest start's rounds). */
#define HOP_MIN_ROUNDS 5

/* Starts that init names, at most. */
#define SEARCH_MAX_LIST 8

/* The starts that opts->init names for solver, in the order they run, into list; returns their number. */
static int
search_start_list(const FitOptions *opts, const FitSolverDef *solver, FitInit *list)
{
	int			n = 0;

	if (opts->init != FIT_INIT_BEST)
	{
		list[n++] = opts->init;
		return n;
	}
	if (opts->U0 != NULL)
		list[n++] = FIT_INIT_GIVEN;
	list[n++] = FIT_INIT_DISPCA;
	if (solver->qu_start)
		list[n++] = FIT_INIT_QU;
	list[n++] = FIT_INIT_POOLED;
	return n;
}

/* ------------------------------------------------------------------------
 * The basins found so far
 * ------------------------------------------------------------------------
 */

/*
 * The optima the search has found (where its converged runs ended), and a
 * watch on the run under way: a run that comes within BASIN_ENTER of one of
 * them is in its basin and would only converge there again, so it stops.
 */
typedef struct Optima
{
	FitBackend *be;
	int			n;
	double	   *U[FIT_MAX_STARTS];
	int			run[FIT_MAX_STARTS];	/* the run (index into the starts) that found it */
	double		f[FIT_MAX_STARTS];	/* its objective */
	double		last[FIT_MAX_STARTS];	/* the watched run's distance to it at the last check */
	int			entered;		/* the optimum the watched run came near, or -1 */
} Optima;

/* The known optimum within radius of U, or -1. */
static int
optima_near(const Optima *o, const double *U, double radius)
{
	for (int k = 0; k < o->n; k++)
		if (fit_projector_distance(o->be->d, o->be->r1, o->U[k], o->be->r1, U, o->be->r1) < radius)
			return k;
	return -1;
}

/* Keep U, where run ended, as a new optimum. */
static void
optima_add(Optima *o, const double *U, int run, double objective)
{
	int64		size = (int64) o->be->d * o->be->r1;

	o->U[o->n] = palloc(sizeof(double) * Max(size, 1));
	memcpy(o->U[o->n], U, sizeof(double) * size);
	o->f[o->n] = objective;
	o->run[o->n++] = run;
}

/* LbfgsWatch check: stop a run that has come into a known optimum's basin. */
static bool
optima_watch(void *arg, const double *U, double objective)
{
	Optima	   *o = arg;

	o->entered = -1;
	for (int k = 0; k < o->n && o->entered < 0; k++)
	{
		double		dist = fit_projector_distance(o->be->d, o->be->r1, o->U[k], o->be->r1, U,
												  o->be->r1);
		double		gap = (o->f[k] - objective) / Max(fabs(o->f[k]), DBL_MIN);

		if (dist < BASIN_ENTER ||
			(dist < BASIN_NEAR && dist < o->last[k] && gap >= 0.0 && gap <= BASIN_NEAR_GAP))
			o->entered = k;
		o->last[k] = dist;
	}
	return o->entered >= 0;
}

/*
 * After run j of the search ended at U: the known optimum whose basin it
 * is in (-1: a new one, now known if the run converged).  A run the watch
 * stopped is named for the basin it came into.
 */
static int
settle(Optima *o, FitDiagnostics *diag, int j, const double *U, bool verbose)
{
	FitStartReport *rep = &diag->starts[j];
	int			k = o->entered >= 0 ? o->entered : optima_near(o, U, HOP_BASIN);

	if (o->entered >= 0)
	{
		rep->name = psprintf("%s (basin of %s)", rep->name, diag->starts[o->run[k]].name);
		if (verbose)
			ereport(NOTICE,
					(errmsg("%s: stopped after %d rounds at objective %.12g", rep->name,
							rep->rounds, rep->objective)));
	}
	else if (k < 0 && rep->converged)
	{
		optima_add(o, U, j, rep->objective);
		rep->basin = j;
	}
	if (k >= 0)
		rep->basin = o->run[k];
	o->entered = -1;
	for (int i = 0; i < o->n; i++)
		o->last[i] = INFINITY;
	return k;
}

/* ------------------------------------------------------------------------
 * One run
 * ------------------------------------------------------------------------
 */

/* A new run named name from U with the solver for at most `rounds` rounds (aid: its run's); its report. */
static FitStartReport *
run_from(FitBackend *be, const FitOptions *opts, const FitSolverDef *solver, const char *name,
		 int rounds, double *U, FitDiagnostics *diag, void *aid)
{
	FitStartReport *rep = &diag->starts[diag->nstarts];

	diag->current = diag->nstarts++;
	rep->name = name;
	rep->basin = -1;
	rep->rounds = solver->run(be, opts, U, rounds, diag, rep, aid);
	return rep;
}

/* Run one start with the solver for at most `rounds` rounds (aid: its run's); fills its report. */
static void
run_start(FitBackend *be, const FitOptions *opts, const FitSolverDef *solver, FitInit how,
		  int rounds, double *U, FitDiagnostics *diag, void *aid)
{
	FitStartReport *rep;

	fit_start_u(be, how, opts, solver->exact_starts, U);
	if (solver->start != NULL)
		solver->start(be, U, how);
	rep = run_from(be, opts, solver, fit_init_names[how], rounds, U, diag, aid);
	if (opts->verbose)
		ereport(NOTICE,
				(errmsg("start %s: objective %.12g after %d rounds%s", rep->name, rep->objective,
						rep->rounds, rep->converged ? " (converged)" : "")));
}

/* The start with the highest objective (the first on ties). */
static int
best_start(const FitDiagnostics *diag, int from)
{
	int			best = from;

	for (int j = from + 1; j < diag->nstarts; j++)
		if (diag->starts[j].objective > diag->starts[best].objective)
			best = j;
	return best;
}

/* ------------------------------------------------------------------------
 * The L-BFGS search
 * ------------------------------------------------------------------------
 */

/* The state of one L-BFGS search. */
typedef struct Search
{
	FitBackend *be;
	const FitOptions *opts;
	const FitSolverDef *solver;
	FitOptions	screen;			/* opts with the screening tolerance */
	FitDiagnostics *diag;
	double	   *U;				/* the run under way */
	double	   *Ubest;			/* the best optimum so far */
	int64		size;			/* d x r1 */
	int			best;			/* its run */
	LbfgsMemory *memory;		/* its L-BFGS pairs */
	bool		search;			/* more than one run (else: one start to the tolerance) */
	bool		agree;			/* every start ended in the first one's basin */
	bool		flat;			/* ... and no hop: flat weakest directions, no better candidate */
	int			budget;			/* rounds a hop may run */
	int			m;				/* columns a hop replaces */
	uint64		state;			/* the hops' random directions */
	Optima		optima;
	LbfgsWatch	watch;
} Search;

/* Rounds left of the fit's budget. */
static inline int
rounds_left(const Search *s)
{
	return s->opts->rounds - s->diag->rounds;
}

/* Whether objective a beats b by more than rounding. */
static bool
improves(double a, double b)
{
	return a > b + HOP_GAIN * fabs(b);
}

/*
 * Keep run j (its U and L-BFGS pairs) as the best when it is the first or
 * improves on the best; the pairs of the run that is not kept are freed.
 * Returns whether run j is now the best.
 */
static bool
keep_best(Search *s, int j, LbfgsMemory *mem)
{
	FitDiagnostics *diag = s->diag;

	if (s->memory != NULL && !improves(diag->starts[j].objective, diag->starts[s->best].objective))
	{
		lbfgs_memory_free(mem);
		pfree(mem);
		return false;
	}
	if (s->memory != NULL)
	{
		lbfgs_memory_free(s->memory);
		pfree(s->memory);
	}
	s->memory = mem;
	s->best = j;
	memcpy(s->Ubest, s->U, sizeof(double) * s->size);
	return true;
}

/* A search over the starts of list on be, U its run's iterate. */
static void
search_init(Search *s, FitBackend *be, const FitOptions *opts, const FitSolverDef *solver,
			int n, double *U, FitDiagnostics *diag)
{
	memset(s, 0, sizeof(Search));
	s->be = be;
	s->opts = opts;
	s->solver = solver;
	s->screen = *opts;
	s->diag = diag;
	s->U = U;
	s->size = (int64) be->d * be->r1;
	s->Ubest = palloc(sizeof(double) * Max(s->size, 1));
	s->search = opts->init == FIT_INIT_BEST && (n > 1 || opts->hops > 0) && be->r1 > 0;
	if (s->search)
		s->screen.tolerance = Max(opts->tolerance, SCREEN_TOLERANCE);
	s->state = UINT64CONST(0xA0761D6478BD642F) ^ opts->seed;
	s->agree = true;
	s->m = Min(HOP_COLUMNS, Min(be->r1, be->d - be->r1));
	s->budget = HOP_MIN_ROUNDS;
	s->optima.be = be;
	s->optima.entered = -1;
	s->watch.check = optima_watch;
	s->watch.arg = &s->optima;
}

/* Every start of list to the screening tolerance (the tolerance, without a search). */
static void
search_starts(Search *s, const FitInit *list, int n)
{
	FitDiagnostics *diag = s->diag;

	for (int j = 0; j < n; j++)
	{
		LbfgsAid	aid = {NULL, s->search ? &s->watch : NULL};
		int			basin;

		if (j > 0 && rounds_left(s) <= 0)
			break;
		aid.memory = palloc0(sizeof(LbfgsMemory));
		run_start(s->be, &s->screen, s->solver, list[j], rounds_left(s), s->U, diag, &aid);
		diag->rounds += diag->starts[j].rounds;
		s->budget = Max(s->budget, diag->starts[j].rounds);
		basin = settle(&s->optima, diag, j, s->U, s->opts->verbose);
		if (j > 0 && (basin < 0 || s->optima.run[basin] != s->best))
			s->agree = false;
		keep_best(s, j, aid.memory);
	}
}

/*
 * Hop h from the best optimum, whose start is in s->U, at most budget
 * rounds, watched; returns the known basin it ended in (-1: a new one)
 * and sets *kept when it is the new best.
 */
static int
search_hop(Search *s, int h, bool *kept)
{
	FitDiagnostics *diag = s->diag;
	LbfgsAid	aid = {palloc0(sizeof(LbfgsMemory)), &s->watch};
	FitStartReport *rep = run_from(s->be, &s->screen, s->solver, psprintf("hop %d", h),
								   Min(s->budget, rounds_left(s)), s->U, diag, &aid);
	int			basin;

	diag->rounds += rep->rounds;
	if (s->opts->verbose)
		ereport(NOTICE,
				(errmsg("hop %d: objective %.12g after %d rounds", h, rep->objective,
						rep->rounds)));
	basin = settle(&s->optima, diag, diag->current, s->U, s->opts->verbose);
	*kept = keep_best(s, diag->current, aid.memory);
	return basin;
}

/*
 * Hop h's start in s->U: when the starts agree, the first from the pooled
 * variance the basin leaves, screened (false, and no hop, when the global
 * directions it would replace lie in a flat cluster and no candidate
 * scores above the best); else random directions.
 */
static bool
search_hop_start(Search *s, int h)
{
	if (s->agree && h == 1 && s->m > 0)
	{
		s->flat = !fit_screened_hop(s->be, s->Ubest, s->m, s->diag->starts[s->best].objective,
									s->U);
		return !s->flat;
	}
	fit_hop_start(s->be, s->Ubest, s->m, &s->state, s->U);
	return true;
}

/* Why the search stopped after h hops, in diag->stop. */
static void
search_why(Search *s, int h, int failed, int patience, int known)
{
	char	   *why = s->diag->stop;
	size_t		len = sizeof(s->diag->stop);

	if (s->flat)
		snprintf(why, len, "the starts agreed on one basin whose weakest global directions carry nearly equal pooled variance (a flat spectrum), and no hop's start from the pooled variance it leaves scored above it: no hop run");
	else if (rounds_left(s) <= 0)
		snprintf(why, len, "the round limit (rounds => %d) after %d start(s) and %d hop(s)",
				 s->opts->rounds, s->diag->nstarts - h, h);
	else if (known >= HOP_KNOWN)
		snprintf(why, len, "%d hops in a row came back into known basins: every start and hop ended in one of %d basin(s)",
				 known, s->optima.n);
	else if (failed >= patience && s->agree && patience < s->opts->hops)
		snprintf(why, len, "the starts agreed on one basin and a hop from the pooled variance it leaves found no better optimum");
	else if (failed >= patience)
		snprintf(why, len, "%d hop(s) in a row found no better optimum (hops => %d), %d basin(s) found",
				 failed, s->opts->hops, s->optima.n);
	else
		snprintf(why, len, "the most starts and hops of a fit (%d)", FIT_MAX_STARTS);
}

/*
 * Hops from the best optimum until opts->hops hops in a row fail to
 * improve it (one hop when the starts all ended in one basin, until a hop
 * finds another; that hop starts from the pooled variance the basin
 * leaves, a deterministic probe of its weakest directions, the others
 * from random directions, which explore a landscape of several basins
 * more widely), or HOP_KNOWN hops in a row come back into known basins;
 * none when the starts agree, the directions the first would replace lie
 * in a flat cluster and no candidate scores above the best
 * (fit_screened_hop).
 * A hop runs at most as many rounds as the slowest start did
 * (HOP_MIN_ROUNDS at least): one that has not found a better optimum by
 * then is given up.
 */
static void
search_hops(Search *s)
{
	int			patience = s->agree ? Min(s->opts->hops, 1) : s->opts->hops,
				failed = 0,
				known = 0,
				h = 1;

	for (; s->search && failed < patience && known < HOP_KNOWN &&
		 s->diag->nstarts < FIT_MAX_STARTS && rounds_left(s) > 0; h++)
	{
		bool		kept;
		int			basin;

		if (!search_hop_start(s, h))
			break;
		basin = search_hop(s, h, &kept);

		/* a better optimum in a new basin resets the count; a known basin does not */
		failed = kept && basin < 0 ? 0 : failed + 1;
		known = basin >= 0 ? known + 1 : 0;
		if (failed == 0)
			patience = s->opts->hops;
	}
	if (s->search)
		search_why(s, h - 1, failed, patience, known);
}

/* The best optimum to the tolerance: the winner's rounds continue from its screening. */
static void
search_polish(Search *s)
{
	FitDiagnostics *diag = s->diag;
	FitStartReport *rep = &diag->starts[s->best];

	memcpy(s->U, s->Ubest, sizeof(double) * s->size);
	diag->chosen = s->best;
	/* a run that met the screening tolerance is screened, not converged */
	for (int j = 0; s->search && j < diag->nstarts; j++)
		if (diag->starts[j].ended == FIT_END_CONVERGED && s->screen.tolerance > s->opts->tolerance)
			diag->starts[j].ended = FIT_END_SCREENED;
	/* an objective converged on a flat spectrum: the flat rule, not the tolerance, ends it */
	if (s->search && rep->ended != FIT_END_FLAT)
	{
		if (s->screen.tolerance > s->opts->tolerance && rounds_left(s) > 0)
		{
			LbfgsAid	aid = {s->memory, NULL};
			int			more;

			diag->current = s->best;
			more = s->solver->run(s->be, s->opts, s->U, rounds_left(s), diag, rep, &aid);
			rep->rounds += more;
			diag->rounds += more;
		}
		else
			rep->converged = rep->converged && s->screen.tolerance <= s->opts->tolerance;
	}
	if (rep->ended == FIT_END_BUDGET && rounds_left(s) <= 0)
		rep->ended = FIT_END_ROUND_LIMIT;
	diag->step = NAN;
}

/* diag->stop gains how the chosen run ended: "...; the best (start) <how>". */
static void
search_why_end(FitDiagnostics *diag)
{
	const FitStartReport *won = &diag->starts[diag->chosen];
	size_t		used = strlen(diag->stop);

	snprintf(diag->stop + used, sizeof(diag->stop) - used, "; the chosen run (%s): %s%s",
			 won->name, fit_run_end_name(won),
			 won->ended == FIT_END_FLAT ? " (the objective stopped gaining while U moves among nearly equal directions)" : "");
}

/*
 * L-BFGS: the starts, the hops, then the best to the tolerance.  Any run
 * after the first stops as soon as it comes within BASIN_ENTER of an
 * optimum found before (the watch): it would only converge there again.
 * A single start runs to the tolerance directly.
 */
void
fit_search_lbfgs(FitBackend *be, const FitOptions *opts, const FitSolverDef *solver, double *U,
				 FitDiagnostics *diag)
{
	FitInit		list[SEARCH_MAX_LIST];
	int			n = search_start_list(opts, solver, list);
	Search		s;

	search_init(&s, be, opts, solver, n, U, diag);
	search_starts(&s, list, n);
	search_hops(&s);
	if (!s.search)
		snprintf(diag->stop, sizeof(diag->stop), "one start (init '%s')",
				 fit_init_names[list[0]]);
	search_polish(&s);
	search_why_end(diag);
}

/* ------------------------------------------------------------------------
 * The probe search (the paper solver's)
 * ------------------------------------------------------------------------
 */

void
fit_search_probe(FitBackend *be, const FitOptions *opts, const FitSolverDef *solver, double *U,
				 FitDiagnostics *diag)
{
	FitInit		list[SEARCH_MAX_LIST];
	int			n = search_start_list(opts, solver, list);
	FitInit		how = list[0];

	if (n > 1)
	{
		FitOptions	probe = *opts;

		probe.verbose = false;
		for (int j = 0; j < n; j++)
			run_start(be, &probe, solver, list[j], Min(opts->rounds, PROBE_ROUNDS), U,
					  diag, NULL);
		how = list[best_start(diag, 0)];
		if (opts->verbose)
			ereport(NOTICE, (errmsg("init best: chose %s", fit_init_names[how])));
	}
	run_start(be, opts, solver, how, opts->rounds, U, diag, NULL);
	diag->chosen = diag->nstarts - 1;
	diag->rounds = diag->starts[diag->chosen].rounds;
	if (diag->starts[diag->chosen].ended == FIT_END_BUDGET)
		diag->starts[diag->chosen].ended = FIT_END_ROUND_LIMIT;
	if (n > 1)
		diag->starts[diag->chosen].name = psprintf("%s (chosen by the probe)",
												   fit_init_names[how]);
	if (n > 1)
		snprintf(diag->stop, sizeof(diag->stop),
				 "the %s solver: the best of %d starts after a probe of %d rounds each", solver->name, n,
				 PROBE_ROUNDS);
	else
		snprintf(diag->stop, sizeof(diag->stop), "the %s solver: one start (init '%s')",
				 solver->name, fit_init_names[how]);
	search_why_end(diag);
}
