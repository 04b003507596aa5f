/*
 * stats_dist_agg.c -- perpca_stats_distributed(float8[]) and
 * perpca_merge_distributed(perpca_stats): the statistics aggregates with a
 * perpca_stats transition state, which Citus splits across its workers
 *
 * Citus combines partial states on the coordinator only when the state type
 * is a real type (it moves them as text through the type's I/O functions);
 * with perpca_stats(float8[])'s `internal` state it ships every raw row.
 * These aggregates declare the state type perpca_stats, but pass around an
 * expanded object (utils/expandeddatum.h) holding perpca_stats(float8[])'s
 * very state, advanced by stats_agg.c's own transitions: the work per row
 * and the bits of the result are the same.  Whenever the state is needed as
 * a value (a Citus worker's output, a tuple leaving a parallel worker), it
 * flattens into the perpca_stats value of the rows so far; the combine
 * function merges such a value as perpca_merge does.  The object lives in
 * a context under the aggregate context, so that the executor (and Citus)
 * keeps it as the state without copying it.
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/expandeddatum.h"
#include "utils/memutils.h"

#include "error_kinds.h"
#include "perpca.h"
#include "stats.h"

/* stats_agg.c's support functions of perpca_stats(float8[]) and perpca_merge(). */
extern Datum perpca_stats_accum(PG_FUNCTION_ARGS);
extern Datum perpca_stats_accum_nulls(PG_FUNCTION_ARGS);
extern Datum perpca_stats_merge_accum(PG_FUNCTION_ARGS);

PG_FUNCTION_INFO_V1(perpca_stats_dist_accum);
PG_FUNCTION_INFO_V1(perpca_stats_dist_accum_nulls);
PG_FUNCTION_INFO_V1(perpca_stats_dist_combine);
PG_FUNCTION_INFO_V1(perpca_stats_dist_final);

/* The transition state: stats_agg.c's state, seen as a perpca_stats value. */
typedef struct DistStats
{
	ExpandedObjectHeader hdr;
	StatsState *inner;			/* stats_agg.c's state; never NULL */
	PerpcaStats *flat;			/* the value of the rows so far, once asked for */
} DistStats;

static Size dist_get_flat_size(ExpandedObjectHeader *eohptr);
static void dist_flatten_into(ExpandedObjectHeader *eohptr, void *result, Size allocated_size);

static const ExpandedObjectMethods dist_methods = {
	dist_get_flat_size,
	dist_flatten_into
};

/* Is this datum (not NULL) our read-write state? */
static bool
is_our_state(Datum d)
{
	return VARATT_IS_EXTERNAL_EXPANDED_RW(DatumGetPointer(d)) &&
		DatumGetEOHP(d)->eoh_methods == &dist_methods;
}

#define STATES_CONTEXT_NAME "perpca_stats_distributed states"

/*
 * The context of the states under aggcxt: one child context that every
 * group's state shares.  A context per state would be simpler, but a hash
 * aggregate measures its memory over all child contexts for every new group
 * (quadratic in the number of groups), and each would cost a 1 kB block.
 * Nothing deletes one state alone: the executor deletes an expanded state
 * only when the transition returns another datum, and ours always returns
 * the state it was given; the states go when the aggregate context is reset.
 */
static MemoryContext
states_context(MemoryContext aggcxt)
{
	for (MemoryContext c = aggcxt->firstchild; c != NULL; c = c->nextchild)
		if (strcmp(c->name, STATES_CONTEXT_NAME) == 0)
			return c;
	return AllocSetContextCreate(aggcxt, STATES_CONTEXT_NAME, ALLOCSET_DEFAULT_SIZES);
}

/* A new state holding stats_agg.c's state `inner`, in the states' context under aggcxt. */
static DistStats *
dist_create(MemoryContext aggcxt, StatsState *inner)
{
	MemoryContext cxt = states_context(aggcxt);
	DistStats  *ds = MemoryContextAllocZero(cxt, sizeof(DistStats));

	EOH_init_header(&ds->hdr, &dist_methods, cxt);
	ds->inner = inner;
	return ds;
}

/* The state is about to change: forget its flattened value. */
static void
dist_changed(DistStats *ds)
{
	if (ds->flat != NULL)
	{
		pfree(ds->flat);
		ds->flat = NULL;
	}
}

/*
 * One step of stats_agg.c's transition fn (perpca_stats_accum,
 * perpca_stats_accum_nulls or perpca_stats_merge_accum), called with this
 * call's own context and arguments but ds's state in argument 0 (NULL when
 * ds is NULL: a new state) and, when value is not NULL, *value in argument
 * 1.  Returns the state.
 */
static DistStats *
dist_step(FunctionCallInfo fcinfo, MemoryContext aggcxt, DistStats *ds, PGFunction fn,
		  const Datum *value)
{
	LOCAL_FCINFO(f, 3);
	StatsState *inner;

	Assert(fcinfo->nargs <= 3);
	memcpy(f, fcinfo, SizeForFunctionCallInfo(fcinfo->nargs));
	f->args[0].value = PointerGetDatum(ds ? ds->inner : NULL);
	f->args[0].isnull = ds == NULL;
	if (value != NULL)
	{
		f->args[1].value = *value;
		f->args[1].isnull = false;
	}
	if (ds != NULL)
		dist_changed(ds);
	inner = (StatsState *) DatumGetPointer(fn(f));
	Assert(!f->isnull);
	if (ds == NULL)
		ds = dist_create(aggcxt, inner);
	ds->inner = inner;
	return ds;
}

/*
 * The state in argument 0: ours as it is; a perpca_stats value that is not
 * our state (an initial value, a copy the executor made) becomes a new state
 * holding it; NULL stays NULL.
 */
static DistStats *
dist_state_arg(FunctionCallInfo fcinfo, MemoryContext aggcxt)
{
	if (PG_ARGISNULL(0))
		return NULL;
	if (is_our_state(PG_GETARG_DATUM(0)))
		return (DistStats *) DatumGetEOHP(PG_GETARG_DATUM(0));
	return dist_step(fcinfo, aggcxt, NULL, perpca_stats_merge_accum, &PG_GETARG_DATUM(0));
}

/*
 * A transition: fn, perpca_stats' or perpca_merge's own, on argument 1 (and
 * the missing mode in argument 2, if any); a NULL row or value leaves the
 * state as it is (NULL before the first row).
 */
static Datum
dist_transition(FunctionCallInfo fcinfo, const char *fname, PGFunction fn)
{
	MemoryContext aggcxt = perpca_agg_context(fcinfo, fname, NULL);
	DistStats  *ds = dist_state_arg(fcinfo, aggcxt);

	if (PG_NARGS() == 3 && PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NULL),
				 errmsg("missing must be 'error' or 'skip', not NULL")));
	if (PG_ARGISNULL(1) && ds == NULL)
		PG_RETURN_NULL();
	if (!PG_ARGISNULL(1))
		ds = dist_step(fcinfo, aggcxt, ds, fn, NULL);
	PG_RETURN_DATUM(EOHPGetRWDatum(&ds->hdr));
}

/* perpca_stats_distributed(float8[]) transition: perpca_stats(float8[])'s. */
Datum
perpca_stats_dist_accum(PG_FUNCTION_ARGS)
{
	return dist_transition(fcinfo, "perpca_stats_dist_accum", perpca_stats_accum);
}

/* perpca_stats_distributed(float8[], text) transition: perpca_stats(float8[], text)'s. */
Datum
perpca_stats_dist_accum_nulls(PG_FUNCTION_ARGS)
{
	return dist_transition(fcinfo, "perpca_stats_dist_accum_nulls", perpca_stats_accum_nulls);
}

/*
 * Combine function of both aggregates, and the transition of
 * perpca_merge_distributed(perpca_stats): merges a perpca_stats value (a
 * partial state from a worker, or a stored value) into the state.
 */
Datum
perpca_stats_dist_combine(PG_FUNCTION_ARGS)
{
	return dist_transition(fcinfo, "perpca_stats_dist_combine", perpca_stats_merge_accum);
}

/* Final function: the flat perpca_stats value, as perpca_stats_final builds it. */
Datum
perpca_stats_dist_final(PG_FUNCTION_ARGS)
{
	perpca_agg_context(fcinfo, "perpca_stats_dist_final", NULL);
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	if (!VARATT_IS_EXTERNAL_EXPANDED(DatumGetPointer(PG_GETARG_DATUM(0))) ||
		DatumGetEOHP(PG_GETARG_DATUM(0))->eoh_methods != &dist_methods)
	{
		PerpcaStats *s = perpca_stats_copy_as_stored(PG_GETARG_DATUM(0));

		perpca_stats_validate(s);
		PG_RETURN_POINTER(s);
	}
	PG_RETURN_POINTER(perpca_stats_state_final(((DistStats *) DatumGetEOHP(PG_GETARG_DATUM(0)))->inner));
}

/* ------------------------------------------------------------------------
 * Flattening: the state as a perpca_stats value
 * ------------------------------------------------------------------------
 */

/* Build (once per change) the value of the rows so far, as perpca_stats_final does. */
static Size
dist_get_flat_size(ExpandedObjectHeader *eohptr)
{
	DistStats  *ds = (DistStats *) eohptr;

	if (ds->flat == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(ds->hdr.eoh_context);

		ds->flat = perpca_stats_state_final(ds->inner);
		MemoryContextSwitchTo(old);
	}
	return VARSIZE(ds->flat);
}

static void
dist_flatten_into(ExpandedObjectHeader *eohptr, void *result, Size allocated_size)
{
	DistStats  *ds = (DistStats *) eohptr;

	Assert(ds->flat != NULL && allocated_size == VARSIZE(ds->flat));
	memcpy(result, ds->flat, allocated_size);
}
