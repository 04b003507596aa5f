/*
 * federated_shard.c -- the shard side of perpca_fit_federated: the client
 * steps of PerPCA run where the data live
 *
 * perpca_shard_open() runs the user's query on the shard (clients.c) and
 * keeps its clients in a backend-local state (a memory context under
 * TopMemoryContext, found by a fit id).  perpca_shard_init() builds the S_i
 * and returns what the stacked-PC start needs, perpca_shard_round() runs
 * fit_client_step() for every local client against the U it is given and
 * returns the weighted sum of the clients' U_i, perpca_shard_finish() and
 * perpca_shard_result() make the local components feasible and emit them.
 * The state dies with perpca_shard_close() or with the backend.  The
 * numerical work is fit.c's; the coordinator is federated.c.
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "clients.h"
#include "federated.h"
#include "fit.h"
#include "linalg.h"
#include "perpca.h"

PG_FUNCTION_INFO_V1(perpca_shard_open);
PG_FUNCTION_INFO_V1(perpca_shard_init);
PG_FUNCTION_INFO_V1(perpca_shard_round);
PG_FUNCTION_INFO_V1(perpca_shard_finish);
PG_FUNCTION_INFO_V1(perpca_shard_result);
PG_FUNCTION_INFO_V1(perpca_shard_close);

const char *const federated_init_names[2] = {"dispca", "qu"};

/* The state of one federated fit in this backend. */
typedef struct ShardFit
{
	struct ShardFit *next;
	char	   *id;
	MemoryContext cxt;			/* everything below lives here */
	int			n;				/* clients */
	int			d;
	int			r1;
	bool		sample_weights;
	ClientInput *in;			/* the clients, in query order */
	FitProblem *p;				/* NULL until perpca_shard_init */
	FitLocalPCs *pcs;			/* each client's top k_i eigenpairs, for the start */
	FitUpdate	update;
	FitRetraction retraction;
	bool		v_ready;		/* V_i set from the PCs (first round) */
	bool		finished;		/* perpca_shard_finish ran */
} ShardFit;

static ShardFit *shard_fits = NULL;

/* ------------------------------------------------------------------------
 * The open fits
 * ------------------------------------------------------------------------
 */

/* Build a composite result from values for a function returning a row type. */
static Datum
shard_row(FunctionCallInfo fcinfo, Datum *values, bool *nulls)
{
	TupleDesc	desc;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	desc = BlessTupleDesc(desc);
	return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
}

/* The open fit with this id, or NULL. */
static ShardFit *
shard_fit_find(const char *id)
{
	for (ShardFit *sf = shard_fits; sf != NULL; sf = sf->next)
		if (strcmp(sf->id, id) == 0)
			return sf;
	return NULL;
}

/* The open fit with this id, or undefined_object. */
static ShardFit *
shard_fit_get(FunctionCallInfo fcinfo)
{
	char	   *id = clients_text_arg(fcinfo, 0, "fit_id");
	ShardFit   *sf = shard_fit_find(id);

	if (sf == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("federated fit \"%s\" is not open in this session", id),
				 errhint("perpca_shard_open must run first, in the same session.")));
	return sf;
}

/* The open fit with this id, which perpca_shard_init must have prepared. */
static ShardFit *
shard_fit_ready(FunctionCallInfo fcinfo)
{
	ShardFit   *sf = shard_fit_get(fcinfo);

	if (sf->p == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("federated fit \"%s\" has not been initialized", sf->id),
				 errhint("Call perpca_shard_init first.")));
	return sf;
}

/* Unlink a fit and free everything it holds. */
static void
shard_fit_free(ShardFit *sf)
{
	ShardFit  **link = &shard_fits;

	while (*link != sf)
		link = &(*link)->next;
	*link = sf->next;
	MemoryContextDelete(sf->cxt);
}

/* A new fit under this id, registered in the list of open fits. */
static ShardFit *
shard_fit_new(const char *id, int r1, bool sample_weights)
{
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext, "perpca shard fit",
											  ALLOCSET_DEFAULT_SIZES);
	ShardFit   *sf = MemoryContextAllocZero(cxt, sizeof(ShardFit));

	sf->cxt = cxt;
	sf->id = MemoryContextStrdup(cxt, id);
	sf->r1 = r1;
	sf->sample_weights = sample_weights;
	sf->next = shard_fits;
	shard_fits = sf;
	return sf;
}

/* Read the query's clients into sf (in sf->cxt) and check them; the fit is freed on error. */
static void
shard_read(FunctionCallInfo fcinfo, ShardFit *sf, const char *query, int n_local)
{
	PG_TRY();
	{
		sf->in = clients_read(fcinfo, query, n_local, sf->cxt, &sf->n);
		clients_check(sf->in, sf->n, sf->r1);
	}
	PG_CATCH();
	{
		shard_fit_free(sf);
		PG_RE_THROW();
	}
	PG_END_TRY();
	sf->d = sf->n > 0 ? sf->in[0].stats->dim : 0;
}

/*
 * perpca_shard_open(fit_id, query, n_global, n_local, weights)
 *   RETURNS (n_clients, dim, n_rows, mean_sum, stats_bytes)
 * Read this shard's clients; mean_sum = sum_i n_i mean_i (for center 'global').
 */
Datum
perpca_shard_open(PG_FUNCTION_ARGS)
{
	char	   *id = clients_text_arg(fcinfo, 0, "fit_id");
	char	   *query = clients_text_arg(fcinfo, 1, "query");
	ShardFit   *sf;
	double	   *mean_sum;
	double		rows;
	int64		bytes = 0;
	Datum		values[5];
	bool		nulls[5] = {0};

	if (PG_ARGISNULL(2) || PG_ARGISNULL(3) || PG_GETARG_INT32(2) < 1 || PG_GETARG_INT32(3) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("n_global must be at least 1 and n_local at least 0")));
	if (shard_fit_find(id) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("federated fit \"%s\" is already open in this session", id)));
	sf = shard_fit_new(id, PG_GETARG_INT32(2),
					   clients_choice_arg(fcinfo, 4, "weights", clients_weights_names,
										  lengthof(clients_weights_names)) == 1);
	shard_read(fcinfo, sf, query, PG_GETARG_INT32(3));
	mean_sum = palloc0(sizeof(double) * Max(sf->d, 1));
	rows = clients_mean_sum(sf->in, sf->n, mean_sum);
	for (int i = 0; i < sf->n; i++)
		bytes += VARSIZE(sf->in[i].stats);
	values[0] = Int32GetDatum(sf->n);
	values[1] = Int32GetDatum(sf->d);
	values[2] = Int64GetDatum((int64) rows);
	values[3] = PointerGetDatum(perpca_vector_build(mean_sum, sf->d));
	values[4] = Int64GetDatum(bytes);
	PG_RETURN_DATUM(shard_row(fcinfo, values, nulls));
}

/* ------------------------------------------------------------------------
 * The start
 * ------------------------------------------------------------------------
 */

/* Build the clients' S_i and the problem (in sf->cxt), and each client's top k_i eigenpairs. */
static void
shard_prepare(ShardFit *sf, const double *centre)
{
	FitClient  *clients = clients_build(sf->in, sf->n, centre, sf->sample_weights);

	sf->p = fit_problem_create(sf->d, sf->r1, sf->n, clients);
	for (int i = 0; i < sf->n; i++)
		clients[i].lfirst = sf->r1;
	sf->pcs = fit_local_pcs(sf->p);
}

/*
 * The shard's part of the stacked-PC start, compressed: B (d x q) with
 * B B' = sum_i L_i D_i L_i' over its clients (D_i = I for dispca,
 * w_i lambda_ij for qu), q = min(d, sum k_i).  Returns B, sets *q.
 */
static double *
shard_start_basis(ShardFit *sf, bool qu, int *q)
{
	int			d = sf->d,
				K;
	double	   *B = fit_stacked_pcs(sf->p, sf->pcs, qu, &K),
			   *Z,
			   *sigma;

	*q = K;
	if (K <= d)
		return B;
	/* more columns than rows: B B' = Z diag(sigma^2) Z', send Z diag(sigma) */
	Z = palloc(sizeof(double) * d * d);
	sigma = palloc(sizeof(double) * d);
	fit_left_singular(sf->p, d, K, B, d, Z, d, sigma);
	for (int j = 0; j < d; j++)
		linalg_scale_column(d, Z, d, j, sigma[j]);
	*q = d;
	return Z;
}

/* The centre argument: NULL (each client's own mean) or a d-vector. */
static double *
shard_centre_arg(FunctionCallInfo fcinfo, int argno, int d)
{
	double	   *centre;
	int			len;

	if (PG_ARGISNULL(argno))
		return NULL;
	centre = perpca_vector_arg(PG_GETARG_ARRAYTYPE_P(argno), &len, "centre");
	if (len != d)
		perpca_dim_mismatch(d, len, "centre");
	return centre;
}

/* Check that sf can be initialized: not yet, and with clients. */
static void
shard_check_init(ShardFit *sf)
{
	if (sf->p != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("federated fit \"%s\" is already initialized", sf->id)));
	if (sf->n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("federated fit \"%s\" has no clients on this shard", sf->id)));
}

/* shard_prepare in sf->cxt; a half-built problem is dropped on error (its memory goes with the fit). */
static void
shard_prepare_in_fit(ShardFit *sf, const double *centre)
{
	MemoryContext old = MemoryContextSwitchTo(sf->cxt);

	PG_TRY();
	{
		shard_prepare(sf, centre);
	}
	PG_CATCH();
	{
		sf->p = NULL;
		PG_RE_THROW();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
}

/*
 * perpca_shard_init(fit_id, centre, init, update, retraction)
 *   RETURNS (weight, lambda_max, basis)
 * Build the S_i about centre (NULL: each client's own mean), return the sum
 * of the client weights, max_i lambda_max(S_i) and the start basis.
 */
Datum
perpca_shard_init(PG_FUNCTION_ARGS)
{
	ShardFit   *sf = shard_fit_get(fcinfo);
	double	   *centre;
	bool		qu;
	double		weight = 0.0,
				lmax = 0.0,
			   *B;
	int			q;
	Datum		values[3];
	bool		nulls[3] = {0};

	shard_check_init(sf);
	centre = shard_centre_arg(fcinfo, 1, sf->d);
	qu = clients_choice_arg(fcinfo, 2, "init", federated_init_names,
							lengthof(federated_init_names)) == 1;
	sf->update = (FitUpdate) clients_choice_arg(fcinfo, 3, "update", clients_update_names,
												lengthof(clients_update_names));
	sf->retraction = (FitRetraction) clients_choice_arg(fcinfo, 4, "retraction",
														clients_retraction_names,
														lengthof(clients_retraction_names));
	shard_prepare_in_fit(sf, centre);
	for (int i = 0; i < sf->n; i++)
	{
		weight += sf->p->clients[i].weight;
		lmax = Max(lmax, sf->pcs[i].lambda[0]);
	}
	B = shard_start_basis(sf, qu, &q);
	values[0] = Float8GetDatum(weight);
	values[1] = Float8GetDatum(lmax);
	values[2] = PointerGetDatum(perpca_matrix_build(B, sf->d, q));
	PG_RETURN_DATUM(shard_row(fcinfo, values, nulls));
}

/* ------------------------------------------------------------------------
 * Rounds and the end
 * ------------------------------------------------------------------------
 */

/* Read U (d x r1, 2-D float8[]) for fit sf from argument argno into the problem's U. */
static void
shard_u_arg(FunctionCallInfo fcinfo, ShardFit *sf, int argno)
{
	int			rows,
				cols;
	double	   *U = perpca_matrix_arg(PG_GETARG_ARRAYTYPE_P(argno), &rows, &cols, "U");

	if (rows != sf->d || cols != sf->r1)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("U is %d x %d, expected %d x %d", rows, cols, sf->d, sf->r1)));
	memcpy(sf->p->U, U, sizeof(double) * sf->d * sf->r1);
}

/* Client steps of one round against U; sums into usum (d x r1), objective, weight; max change. */
static void
shard_round(ShardFit *sf, double step, double *usum, double *objective, double *weight,
			double *change)
{
	FitProblem *p = sf->p;

	for (int i = 0; i < sf->n; i++)
	{
		FitClient  *c = &p->clients[i];

		CHECK_FOR_INTERRUPTS();
		if (!sf->v_ready)
			fit_init_local(p, c, &sf->pcs[i]);
		fit_client_step(p, c, sf->update, sf->retraction, step);
		linalg_axpy((int64) sf->d * sf->r1, c->weight, c->Ui, usum);
		*objective += c->weight * c->objective;
		*weight += c->weight;
		*change = Max(*change, c->change);
	}
	sf->v_ready = true;
}

/* The step argument of a round: a finite number > 0. */
static double
shard_step_arg(FunctionCallInfo fcinfo, int argno)
{
	double		step = PG_GETARG_FLOAT8(argno);

	if (!isfinite(step) || step <= 0.0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("step must be a finite number > 0")));
	return step;
}

/*
 * perpca_shard_round(fit_id, u, step) RETURNS (u_sum, weight, objective, change)
 * One round's client steps: sum_i w_i U_i, sum_i w_i, sum_i w_i f_i and the
 * largest change of a local projector (w_i = 1, or n_i for weights 'samples').
 */
Datum
perpca_shard_round(PG_FUNCTION_ARGS)
{
	ShardFit   *sf = shard_fit_ready(fcinfo);
	double		step = shard_step_arg(fcinfo, 2);
	double	   *usum = palloc0(sizeof(double) * sf->d * sf->r1);
	double		objective = 0.0,
				weight = 0.0,
				change = 0.0;
	Datum		values[4];
	bool		nulls[4] = {0};

	if (sf->finished)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("federated fit \"%s\" is already finished", sf->id)));
	shard_u_arg(fcinfo, sf, 1);
	shard_round(sf, step, usum, &objective, &weight, &change);
	values[0] = PointerGetDatum(perpca_matrix_build(usum, sf->d, sf->r1));
	values[1] = Float8GetDatum(weight);
	values[2] = Float8GetDatum(objective);
	values[3] = Float8GetDatum(change);
	PG_RETURN_DATUM(shard_row(fcinfo, values, nulls));
}

/*
 * Make one client feasible against U, then add its pieces: gram += w U'S U,
 * grad += w G_U (tangent gradient), *gv += w ||G_V||^2,
 * *objective += w 1/2 tr(W'SW); finally order its local components.
 */
static void
shard_finish_client(ShardFit *sf, FitClient *c, double *gram, double *grad, double *gv,
					double *objective)
{
	int			d = sf->d,
				r1 = sf->r1,
				k = c->k;

	fit_client_feasible(sf->p, c);
	*objective += c->weight * fit_client_gradient(sf->p, c);
	for (int a = 0; a < r1; a++)
		for (int b = 0; b < r1; b++)
			gram[a * r1 + b] += c->weight * c->M[a * k + b];
	for (int row = 0; row < d; row++)
	{
		const double *g = c->SW + (int64) row * k;

		for (int j = 0; j < r1; j++)
			grad[row * r1 + j] += c->weight * g[j];
		for (int j = r1; j < k; j++)
			*gv += c->weight * g[j] * g[j];
	}
	fit_order_local(sf->p, c);
}

/*
 * perpca_shard_finish(fit_id, u) RETURNS (gram, objective, gradient, gradient_v, weight)
 * Final feasibility against U and the pieces of the fit's diagnostics:
 * sum_i w_i U'S_iU (n_global x n_global), sum_i w_i f_i, sum_i w_i G_U,i
 * (d x n_global), sum_i w_i ||G_V,i||^2 and sum_i w_i.
 */
Datum
perpca_shard_finish(PG_FUNCTION_ARGS)
{
	ShardFit   *sf = shard_fit_ready(fcinfo);
	int			d = sf->d,
				r1 = sf->r1;
	double	   *gram = palloc0(sizeof(double) * r1 * r1);
	double	   *grad = palloc0(sizeof(double) * d * r1);
	double		gv = 0.0,
				objective = 0.0,
				weight = 0.0;
	Datum		values[5];
	bool		nulls[5] = {0};

	if (!sf->v_ready)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("federated fit \"%s\" has not run a round", sf->id)));
	shard_u_arg(fcinfo, sf, 1);
	for (int i = 0; i < sf->n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		shard_finish_client(sf, &sf->p->clients[i], gram, grad, &gv, &objective);
		weight += sf->p->clients[i].weight;
	}
	sf->finished = true;
	values[0] = PointerGetDatum(perpca_matrix_build(gram, r1, r1));
	values[1] = Float8GetDatum(objective);
	values[2] = PointerGetDatum(perpca_matrix_build(grad, d, r1));
	values[3] = Float8GetDatum(gv);
	values[4] = Float8GetDatum(weight);
	PG_RETURN_DATUM(shard_row(fcinfo, values, nulls));
}

/* perpca_shard_result(fit_id) RETURNS TABLE (client, kind, component, pc, variance): the local rows. */
Datum
perpca_shard_result(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ShardFit   *sf = shard_fit_ready(fcinfo);

	if (!sf->finished)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("federated fit \"%s\" is not finished", sf->id),
				 errhint("Call perpca_shard_finish first.")));
	InitMaterializedSRF(fcinfo, 0);
	clients_put_local(rsinfo, sf->p, sf->in);
	return (Datum) 0;
}

/* perpca_shard_close(fit_id) RETURNS boolean: free the fit's state; false if it was not open. */
Datum
perpca_shard_close(PG_FUNCTION_ARGS)
{
	char	   *id = clients_text_arg(fcinfo, 0, "fit_id");
	ShardFit   *sf = shard_fit_find(id);

	if (sf == NULL)
		PG_RETURN_BOOL(false);
	shard_fit_free(sf);
	PG_RETURN_BOOL(true);
}
