/*
 * missing_eval.c -- perpca_evaluate_imputation(): how well a stored model
 * fills entries hidden at random, per client, next to the model's centre
 *
 * The caller's query returns rows (client, x float8[]); it runs as the
 * caller wrote it (the caller's own search_path and objects).  Each observed
 * entry of a row is hidden with probability `share`, drawn from a generator
 * seeded by `seed` and the row's bytes, so the same rows hide the same
 * entries in any order.  The hidden entries are filled as
 * perpca_model_impute fills them (model_impute_row: the model's
 * probabilistic PCA form given the row's other entries) and, for comparison,
 * by the client's centre (the client's mean under center 'client'): the
 * filling of a row with nothing observed.  The model is read by the checked
 * model reader (model_read.c), once, at the first filling.  Per
 * client: rows, hidden entries and the mean squared error of each filling in
 * the data's units, and their ratio.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "common/pg_prng.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "client_key.h"
#include "error_kinds.h"
#include "missing.h"
#include "model_bind.h"
#include "perpca.h"
#include "row_reader.h"

PG_FUNCTION_INFO_V1(perpca_evaluate_imputation);

/* What one client accumulates. */
typedef struct ImputeClient
{
	char	   *name;
	int64		rows;
	int64		skipped;		/* rows with gaps left out (missing => 'skip') */
	int64		hidden;
	double		sse;			/* squared errors of the model's filling */
	double		sse_centre;		/* squared errors of the centre's */
} ImputeClient;

/* The clients seen so far (in arrival order; the last one is looked up first), in cxt. */
typedef struct ImputeClients
{
	MemoryContext cxt;
	ImputeClient *items;
	int			n;
	int			cap;
	int			last;
} ImputeClients;

static ImputeClient *
client_entry(ImputeClients *cs, const char *name)
{
	if (cs->n > 0 && strcmp(cs->items[cs->last].name, name) == 0)
		return &cs->items[cs->last];
	for (int i = 0; i < cs->n; i++)
		if (strcmp(cs->items[i].name, name) == 0)
		{
			cs->last = i;
			return &cs->items[i];
		}
	if (cs->n == cs->cap)
	{
		cs->cap = Max(16, cs->cap * 2);
		cs->items = cs->items ? repalloc(cs->items, sizeof(ImputeClient) * cs->cap)
			: MemoryContextAlloc(cs->cxt, sizeof(ImputeClient) * cs->cap);
	}
	memset(&cs->items[cs->n], 0, sizeof(ImputeClient));
	cs->items[cs->n].name = MemoryContextStrdup(cs->cxt, name);
	cs->last = cs->n;
	return &cs->items[cs->n++];
}

static int
client_cmp(const void *a, const void *b)
{
	return strcmp(((const ImputeClient *) a)->name, ((const ImputeClient *) b)->name);
}

/* One pass over the query's rows: what evaluating each row needs. */
typedef struct ImputeRun
{
	text	   *model;			/* the model's name */
	const ModelData *m;			/* its data, opened at the first filling (NULL before) */
	MemoryContext mcxt;			/* the call's memory, which holds the reference to m */
	double		share;
	int64		seed;
	PerpcaMissing mode;
	ImputeClients *cs;
	MemoryContext rowcxt;		/* reset after each row */
	ClientKeyOut keyout;		/* how the client column is written (client_key.c) */
	bool		key_ready;		/* keyout is set */
	MemoryContext keycxt;		/* where keyout lives */
} ImputeRun;

/* Mark in keep the observed entries of the row that stay, hiding each with probability share; the count hidden. */
static int
hide_entries(ArrayType *arr, const bool *obs, int d, double share, int64 seed, bool *keep)
{
	pg_prng_state rng;
	int			hidden = 0;

	pg_prng_seed(&rng, hash_bytes_extended((const unsigned char *) ARR_DATA_PTR(arr),
										   ARR_SIZE(arr) - ARR_DATA_OFFSET(arr), (uint64) seed));
	for (int j = 0; j < d; j++)
	{
		bool		observed = obs == NULL || obs[j];

		keep[j] = observed && !(pg_prng_double(&rng) < share);
		hidden += observed && !keep[j];
	}
	return hidden;
}

static void
model_release(void *arg)
{
	model_unref((ModelData *) arg);
}

/* The model of the run, opened at its first filling and referenced until the call's memory goes. */
static const ModelData *
run_model(ImputeRun *run)
{
	if (run->m == NULL)
	{
		ModelData  *m = model_open(run->model);
		MemoryContextCallback *release = MemoryContextAlloc(run->mcxt, sizeof(MemoryContextCallback));

		m->refcount++;
		release->func = model_release;
		release->arg = m;
		MemoryContextRegisterResetCallback(run->mcxt, release);
		run->m = m;
	}
	return run->m;
}

/* Add the squared errors of the fillings f (model) and c (centre) on the hidden entries to e. */
static void
add_errors(ImputeClient *e, const double *x, const bool *obs, const bool *keep,
		   const double *f, const double *c, int d)
{
	for (int j = 0; j < d; j++)
		if ((obs == NULL || obs[j]) && !keep[j])
		{
			e->sse += (f[j] - x[j]) * (f[j] - x[j]);
			e->sse_centre += (c[j] - x[j]) * (c[j] - x[j]);
		}
}

/* One row of the query: hide, fill twice, add the squared errors to its client. */
static void
evaluate_row(ImputeRun *run, const char *client, ArrayType *arr)
{
	int			d;
	const double *x;
	const bool *obs;
	bool	   *keep;
	int			hidden;
	const ModelData *m;
	const ModelClient *c;
	double	   *f;
	double	   *centre;
	ImputeClient *e = client_entry(run->cs, client);

	missing_read_row(arr, run->mode == PERPCA_MISSING_ERROR ? run->mode : PERPCA_MISSING_OBSERVED,
					 &d, &x, &obs);
	if (obs != NULL && run->mode == PERPCA_MISSING_SKIP)
	{
		e->skipped++;
		return;
	}
	keep = palloc(sizeof(bool) * d);
	hidden = hide_entries(arr, obs, d, run->share, run->seed, keep);
	e->rows++;
	if (hidden == 0)
		return;
	m = run_model(run);
	c = model_client_named(m, run->model, client);
	if (d != m->d)
		perpca_dim_mismatch(m->d, d, "x");
	f = palloc(sizeof(double) * d);
	centre = palloc(sizeof(double) * d);
	model_impute_row(m, c, x, keep, f);
	model_impute_row(m, c, x, palloc0(sizeof(bool) * d), centre);	/* nothing observed */
	add_errors(e, x, obs, keep, f, centre, d);
	e->hidden += hidden;
}

/* The query as rows (client, x float8[]), whatever form of rows it returns (row_reader.c). */
static char *
rows_query(const char *query, PerpcaMissing mode)
{
	RowSource	src;

	row_source_open(&src, query, "query", mode);
	if (src.form == ROW_FORM_STATS)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_WRONG_TYPE),
				 errmsg("perpca_evaluate_imputation needs rows, not statistics"),
				 errhint("Return (client, x) rows: a numeric array, a vector or halfvec, or numeric feature columns.")));
	return row_source_rows_sql(&src);
}

/* The text of the key of the first column of desc, for each row (as the fit stored keys). */
static char *
key_text(TupleDesc desc, Datum k, ImputeRun *run)
{
	if (!run->key_ready)
	{
		client_key_prepare(&run->keyout, TupleDescAttr(desc, 0)->atttypid, run->keycxt);
		run->key_ready = true;
	}
	return client_key_text(&run->keyout, k);
}

/* Evaluate one fetched tuple (client, x) in the row context; a NULL x is passed over. */
static void
evaluate_tuple(HeapTuple tuple, TupleDesc desc, void *arg)
{
	ImputeRun  *run = arg;
	bool		isnull;
	Datum		k = SPI_getbinval(tuple, desc, 1, &isnull);
	Datum		v;
	MemoryContext old;

	if (isnull)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NULL),
				 errmsg("the client of an evaluated row must not be NULL")));
	v = SPI_getbinval(tuple, desc, 2, &isnull);
	if (isnull)
		return;
	old = MemoryContextSwitchTo(run->rowcxt);
	evaluate_row(run, key_text(desc, k, run), DatumGetArrayTypeP(v));
	MemoryContextSwitchTo(old);
	MemoryContextReset(run->rowcxt);
}

/*
 * The rows of sql (client, x float8[]) evaluated into run->cs; an error
 * shows without the wrapper's SQL and with this function's hint.
 */
static void
read_guarded(ImputeRun *run, const char *sql)
{
	MemoryContext here = CurrentMemoryContext;
	const char *hint = "Pass missing => 'observed' (the default) to hide and fill observed entries only, or "
		"missing => 'skip' to leave out rows with gaps and count them.";

	PG_TRY();
	{
		row_source_run(sql, evaluate_tuple, run);
	}
	PG_CATCH();
	{
		row_rethrow(hint, here);
	}
	PG_END_TRY();
}

/*
 * The one NOTICE: rows skipped (missing => 'skip'), clients left with no
 * rows, and clients whose hidden entries are their centre (no variance:
 * ratio NULL).
 */
static void
report(const ImputeClients *cs)
{
	RowReport	r = {0};

	for (int i = 0; i < cs->n; i++)
		row_report_group(&r, cs->items[i].name, cs->items[i].rows, cs->items[i].skipped,
						 cs->items[i].hidden > 0 && cs->items[i].sse_centre == 0.0);
	row_report("perpca_evaluate_imputation", &r);
}

/* One result row per client, by name. */
static void
put_clients(ReturnSetInfo *rsinfo, ImputeClients *cs)
{
	if (cs->n > 1)
		qsort(cs->items, cs->n, sizeof(ImputeClient), client_cmp);
	for (int i = 0; i < cs->n; i++)
	{
		ImputeClient *e = &cs->items[i];
		Datum		values[7];
		bool		nulls[7] = {false, false, false, e->hidden == 0, e->hidden == 0,
		e->hidden == 0 || e->sse_centre == 0.0, false};

		values[0] = CStringGetTextDatum(e->name);
		values[1] = Int64GetDatum(e->rows);
		values[2] = Int64GetDatum(e->hidden);
		values[3] = Float8GetDatum(e->hidden ? e->sse / e->hidden : 0.0);
		values[4] = Float8GetDatum(e->hidden ? e->sse_centre / e->hidden : 0.0);
		values[5] = Float8GetDatum(nulls[5] ? 0.0 : e->sse / e->sse_centre);
		values[6] = Int64GetDatum(e->skipped);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/*
 * perpca_evaluate_imputation(model, query, share, seed, missing) RETURNS
 * TABLE (client, n, hidden, error, mean_error, ratio, skipped): missing
 * 'observed' (default: a row's gaps stay gaps, its observed entries may be
 * hidden), 'skip' (a row with a gap is left out and counted) or 'error'.
 */
Datum
perpca_evaluate_imputation(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *query = text_to_cstring(PG_GETARG_TEXT_PP(1));
	double		share = PG_GETARG_FLOAT8(2);
	int64		seed = PG_GETARG_INT64(3);
	MemoryContext outer = CurrentMemoryContext;
	ImputeClients cs = {0};
	ImputeRun	run = {0};
	PerpcaMissing mode = row_missing_arg(fcinfo, 4, PERPCA_MISSING_OBSERVED);

	if (!(share > 0.0 && share < 1.0))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_ARGUMENT),
				 errmsg("share must be between 0 and 1 (exclusive), not %g", share)));
	InitMaterializedSRF(fcinfo, 0);
	run.rowcxt = AllocSetContextCreate(outer, "perpca_evaluate_imputation row", ALLOCSET_DEFAULT_SIZES);
	cs.cxt = outer;
	run.model = PG_GETARG_TEXT_PP(0);
	run.mcxt = outer;
	run.share = share;
	run.seed = seed;
	run.mode = mode;
	run.cs = &cs;
	run.keycxt = fcinfo->flinfo->fn_mcxt;

	read_guarded(&run, rows_query(query, mode));
	report(&cs);
	put_clients(rsinfo, &cs);
	return (Datum) 0;
}
