/*
 * calibrate.h -- control limits calibrated on held-out training rows
 * (calibrate.c)
 *
 * A model trained with calibration => share holds out the rows whose hash
 * falls below share (a split bound in its views at train), fits on the
 * rest, scores the held-out rows with its own T^2 and Q after every fit
 * and stores the top scores: perpca_model_monitor(..., limits =>
 * 'calibrated') reads them (split-conformal limits, monitor.c).
 */
#ifndef PERPCA_CALIBRATE_H
#define PERPCA_CALIBRATE_H

#include "postgres.h"

#include "fmgr.h"

#include "model_store.h"

/*
 * The view <base>_calibration of the query's rows (client, x float8[],
 * heldout boolean), bound with search_path path, for share > 0; dropped
 * (when the owner's view) for share 0.  Called after store_source_bind.
 */
extern void calibrate_bind_rows(const StoreModel *sm, const char *query, const char *path, double share);

/*
 * After a fit (train and refresh) of a model with share > 0: score its
 * rows (one pass over <base>_calibration), store the held-out rows' top
 * scores and the training rows' flagged shares, WARNING when the Gaussian
 * limits flag more than twice CALIBRATE_REF_ALPHA of them.  Nothing for 0.
 */
extern void calibrate_after_fit(const StoreModel *sm, double share);

#endif							/* PERPCA_CALIBRATE_H */
