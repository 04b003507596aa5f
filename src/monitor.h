/*
 * monitor.h -- control limits of a stored model (monitor.c): what the
 * calibration of its limits (calibrate.c) shares with it
 */
#ifndef PERPCA_MONITOR_H
#define PERPCA_MONITOR_H

#include "postgres.h"

#include "model_read.h"
#include "stats.h"

/* The level of the reference limits a row's score s = max(T2 / T2_lim, Q / Q_lim) is taken at. */
#define MONITOR_REF_ALPHA 0.01
/* The range of alpha calibrated limits answer for. */
#define MONITOR_CAL_ALPHA_MIN 0.0025
#define MONITOR_CAL_ALPHA_MAX 0.25
/* A client is calibrated on its own held-out rows from this many on: ceil(1 / MONITOR_CAL_ALPHA_MIN) - 1. */
#define MONITOR_CAL_CLIENT_ROWS 399

/*
 * The score s of row x of client c of m (T^2 and Q against their Gaussian
 * limits at MONITOR_REF_ALPHA, either alone where the other has none), NaN
 * when it has no limit; y (d) and t (r1 + r2max) are scratch.
 */
extern double monitor_reference_score(const ModelData *m, const ModelClient *c, const double *x, double *y,
									  double *t);

/*
 * The split-conformal threshold at alpha from n scores whose top ones are
 * top[0 .. stored) (descending): the floor((n + 1) alpha)-th largest, or
 * infinity when n < ceil(1 / alpha) - 1 (or it is not among the stored).
 */
extern double monitor_conformal_threshold(const double *top, int stored, int64 n, double alpha);

/* How many top scores of n to store: enough for alpha up to MONITOR_CAL_ALPHA_MAX. */
extern int	monitor_conformal_keep(int64 n);

/*
 * For the write path (model_store.c): the scores' covariance and the
 * residual moments of a client's statistics s against W = [U; V] (rows), as
 * two arrays; false (nothing set) for empty statistics or no components.
 */
extern bool monitor_client_stats(const PerpcaStats *s, const double *U, int r1, const double *V, int r2,
								 Datum *score_covariance, Datum *residual_moments);

#endif							/* PERPCA_MONITOR_H */
