/*
 * fit_search.h -- the search over starts of one fit (fit_search.c)
 *
 * fit.c asks for the best U the starts and hops can find; the search runs
 * the solver's hooks on the backend and fills the diagnostics' starts,
 * rounds and chosen start.
 */
#ifndef PERPCA_FIT_SEARCH_H
#define PERPCA_FIT_SEARCH_H

#include "fit_types.h"

/*
 * The two searches a solver's row can name.  Each runs the search of opts
 * with solver on be: U (d x r1, allocated by the caller) ends at the chosen
 * start's optimum; diag->starts, rounds and chosen are set.
 *   fit_search_lbfgs  starts to a screening tolerance, hops, the basins
 *                     found, the best on to the tolerance (an L-BFGS run's
 *                     memory and watch: solver_lbfgs.h)
 *   fit_search_probe  a short probe of each start, then the chosen one from
 *                     its beginning (any solver's run hook)
 */
extern FIT_SOLVER_SEARCH(fit_search_lbfgs);
extern FIT_SOLVER_SEARCH(fit_search_probe);

#endif							/* PERPCA_FIT_SEARCH_H */
