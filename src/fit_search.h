/*
 * fit_search.h -- the search over starts of one fit (fit_search.c)
 *
 * fit.c asks for the best U the starts and hops can find; the search runs
 * the solvers on the backend and fills the diagnostics' starts, rounds and
 * chosen start.  Which starts it tries is one function, search_start_list.
 */
#ifndef PERPCA_FIT_SEARCH_H
#define PERPCA_FIT_SEARCH_H

#include "fit_types.h"

/* Starts that init names, at most. */
#define SEARCH_MAX_LIST 8

/* The starts that opts->init names, in the order they run, into list; returns their number. */
extern int	search_start_list(const FitOptions *opts, FitInit *list);

/*
 * Run the search of opts on be: U (d x r1, allocated by the caller) ends
 * at the chosen start's optimum; diag->starts, rounds and chosen are set.
 */
extern void fit_search(FitBackend *be, const FitOptions *opts, double *U, FitDiagnostics *diag);

#endif							/* PERPCA_FIT_SEARCH_H */
