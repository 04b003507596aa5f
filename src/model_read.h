/*
 * model_read.h -- a stored model, read safely and cached per backend
 *
 * model_read.c finds a model's three tables, refuses anything but plain
 * tables of one owner that the caller may read, reads them straight from the
 * heap (no SQL, so no other role's code can run) and keeps the result in a
 * per-backend cache keyed by the info table, renewed when the model's version
 * changes.  model_functions.c holds the SQL functions on top of it.
 */
#ifndef PERPCA_MODEL_READ_H
#define PERPCA_MODEL_READ_H

#include "postgres.h"

#include "utils/relcache.h"

#include "model_schema.h"

/* Its attribute number in rel, checked; errors (detail: which model) when of another type or missing and required. */
extern AttrNumber model_column_attnum(Relation rel, const ModelColumn *col, const char *detail);

/* The caller may read those columns of rel (att[0..ncols), InvalidAttrNumber skipped) without row-level security. */
extern void model_check_readable(Relation rel, const AttrNumber *att, int ncols, const char *what,
								 const char *hint);

typedef enum ModelCenter
{
	CENTER_CLIENT,				/* each client's own mean */
	CENTER_GLOBAL,				/* the pooled mean of all rows */
	CENTER_NONE					/* no centering */
} ModelCenter;

/* A float8 column value that may be NULL. */
typedef struct ModelFloat
{
	double		value;
	bool		isnull;
} ModelFloat;

/* Held-out rows scored by calibrate.c (calibration_rows) and the top scores stored (descending). */
typedef struct ModelCalibration
{
	bool		present;		/* calibration_rows is set */
	int64		rows;
	int			n;
	double	   *scores;
} ModelCalibration;

/* One client of a loaded model. */
typedef struct ModelClient
{
	char	   *name;			/* the key as stored (text) */
	int			namelen;
	int			r2;				/* local components */
	double	   *V;				/* r2 x d, rows */
	int		   *number;			/* r2: component numbers, ascending */
	ModelFloat *variance;		/* r2: variance of each local component */
	double	   *mean;			/* d, or NULL */
	ModelFloat	total_variance; /* about the client's centre */
	ModelFloat	global_ratio;	/* share of it captured by the global components */
	int64		n;				/* training rows */
	double	   *score_cov;		/* (r1 + r2) x (r1 + r2): W S W' about its own mean (scaled), or NULL */
	int			score_cov_len;
	double	   *residual_moments;	/* tr R, tr R^2, tr R^3 of R = (I - W'W) S (I - W'W), or NULL */
	ModelCalibration calibration;	/* its own (model_read_calibration) */
} ModelClient;

/* One loaded version of a model, in its own memory context. */
typedef struct ModelData
{
	Oid			info_oid;
	Oid			clients_oid;
	Oid			components_oid;
	int64		version;
	int			refcount;		/* bindings using these data */
	bool		current;		/* still the cache's entry for info_oid */
	MemoryContext cxt;
	int			d;
	int			r1;
	int			r2max;
	ModelCenter center;
	double	   *U;				/* r1 x d, rows */
	int		   *global_number;	/* r1: component numbers, ascending */
	ModelFloat *global_variance;	/* r1 */
	double	   *global_mean;	/* d, in the data's units */
	double	   *scale;			/* d divisors of the features (info.scale_factors), or NULL */
	char	   *client_type;	/* the type of the fit's client keys (info.client_type), NULL: text */
	char	  **feature_names;	/* d names (info.feature_names), or NULL */
	ModelFloat	total_variance; /* the fit's weighted mean total variance */
	ModelFloat	theta_est;
	int			nclients;
	ModelClient *clients;		/* sorted by name (bytewise, COLLATE "C") */
	bool		calibration_read;
	ModelCalibration calibration;	/* pooled (model_read_calibration) */
	void	   *monitor;		/* monitor.c's figures per client, in cxt */
} ModelData;

/*
 * The current data of the model named by a (possibly schema-qualified) name,
 * after the checks; the caller takes a reference (refcount++) and gives it
 * back with model_unref().  Meant to be called once per statement.
 */
extern ModelData *model_open(text *model);

/* Read the calibration of m (model: its name, for messages) into m, once per loaded version. */
extern void model_read_calibration(ModelData *m, const char *model);

/* Drop one reference; frees data that are no longer current nor used. */
extern void model_unref(ModelData *m);

/* The client of m with this key (bytes, not terminated), or NULL. */
extern const ModelClient *model_find_client(const ModelData *m, const char *name, int len);

#endif							/* PERPCA_MODEL_READ_H */
