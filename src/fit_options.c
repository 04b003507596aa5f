/*
 * fit_options.c -- the options of a fit: names, defaults, checks, JSON
 *
 * The one place that knows an option's default.  Ranks are checked against
 * the dimension later, when the clients are known (fit_input.c).
 */
#include "postgres.h"

#include <math.h>

#include "lib/stringinfo.h"
#include "utils/builtins.h"

#include "fit_options.h"
#include "perpca.h"

const char *const fit_method_names[4] = {"perpca", "dispca", "cpca", "indiv"};
const char *const fit_solver_names[2] = {"lbfgs", "paper"};
const char *const fit_init_names[6] = {"best", "dispca", "qu", "pooled", "random", "given"};
const char *const fit_center_names[3] = {"client", "global", "none"};
const char *const fit_scale_names[2] = {"none", "standard"};
const char *const fit_update_names[2] = {"stgd", "polar"};
const char *const fit_retraction_names[2] = {"polar", "qr"};
const char *const fit_weights_names[2] = {"equal", "samples"};

#define DEFAULT_ROUNDS 5000
/* L-BFGS init 'best': hops in a row that find no better optimum before the search stops. */
#define DEFAULT_HOPS 4
/* Paper: largest projector change of a round; L-BFGS: Riemannian gradient norm / lambda_max. */
#define DEFAULT_TOLERANCE_PAPER 1e-9
#define DEFAULT_TOLERANCE_LBFGS 1e-11

int
fit_choice(const char *value, const char *option, const char *const *names, int nnames)
{
	StringInfoData valid;

	for (int i = 0; i < nnames; i++)
		if (strcmp(value, names[i]) == 0)
			return i;
	initStringInfo(&valid);
	for (int i = 0; i < nnames; i++)
		appendStringInfo(&valid, "%s\"%s\"", i == 0 ? "" : (i == nnames - 1 ? " or " : ", "),
						 names[i]);
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid value for option \"%s\": \"%s\"", option, value),
			 errhint("Valid values are %s.", valid.data)));
	return -1;					/* keep compiler quiet */
}

char *
fit_text_arg(FunctionCallInfo fcinfo, int argno, const char *what)
{
	if (argno < 0 || argno >= PG_NARGS() || PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be NULL", what)));
	return text_to_cstring(PG_GETARG_TEXT_PP(argno));
}

/* Whether argument argno is present and not NULL. */
static bool
given(FunctionCallInfo fcinfo, int argno)
{
	return argno >= 0 && argno < PG_NARGS() && !PG_ARGISNULL(argno);
}

/* A choice option: its index, or dflt when NULL or absent. */
static int
choice_arg(FunctionCallInfo fcinfo, int argno, const char *option, const char *const *names,
		   int nnames, int dflt)
{
	if (!given(fcinfo, argno))
		return dflt;
	return fit_choice(text_to_cstring(PG_GETARG_TEXT_PP(argno)), option, names, nnames);
}

/* An int4 option in [min, max], or dflt when NULL or absent. */
static int
int_arg(FunctionCallInfo fcinfo, int argno, const char *option, int min, int max, int dflt)
{
	int			value;

	if (!given(fcinfo, argno))
		return dflt;
	value = PG_GETARG_INT32(argno);
	if (value < min || value > max)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"%s\" must be between %d and %d, got %d", option, min, max, value)));
	return value;
}

/* A rank (n_global, n_local): required, 0 .. PERPCA_MAX_DIM. */
static int
rank_arg(FunctionCallInfo fcinfo, int argno, const char *option)
{
	if (!given(fcinfo, argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be NULL", option)));
	return int_arg(fcinfo, argno, option, 0, PERPCA_MAX_DIM, 0);
}

/* A finite float8 option > 0 (>= 0 when zero_ok), or dflt when NULL or absent. */
static double
positive_arg(FunctionCallInfo fcinfo, int argno, const char *option, bool zero_ok, double dflt)
{
	double		value;

	if (!given(fcinfo, argno))
		return dflt;
	value = PG_GETARG_FLOAT8(argno);
	if (!isfinite(value) || value < 0.0 || (value == 0.0 && !zero_ok))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"%s\" must be a finite number %s 0", option, zero_ok ? ">=" : ">"),
				 errhint("Pass NULL for the default.")));
	return value;
}

/* A boolean option, or dflt when NULL or absent. */
static bool
bool_arg(FunctionCallInfo fcinfo, int argno, bool dflt)
{
	return given(fcinfo, argno) ? PG_GETARG_BOOL(argno) : dflt;
}

void
fit_options_parse(FunctionCallInfo fcinfo, const FitArgPositions *pos, FitOptions *o)
{
	/* A rank scan (perpca_choose_ranks) has no rank arguments: it sets them per pair. */
	bool		ranks = pos->n_global >= 0;

	memset(o, 0, sizeof(FitOptions));
	o->n_global = ranks ? rank_arg(fcinfo, pos->n_global, "n_global") : 0;
	o->n_local = ranks ? rank_arg(fcinfo, pos->n_local, "n_local") : 0;
	o->method = choice_arg(fcinfo, pos->method, "method", fit_method_names, 4, FIT_METHOD_PERPCA);
	if (ranks && o->n_global + o->n_local == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("n_global and n_local are both 0: there are no components to fit"),
				 errhint("Ask for at least one global or local component.")));
	o->solver = choice_arg(fcinfo, pos->solver, "solver", fit_solver_names, 2, FIT_SOLVER_LBFGS);
	o->rounds = int_arg(fcinfo, pos->rounds, "rounds", 0, 10000000, DEFAULT_ROUNDS);
	o->tolerance = positive_arg(fcinfo, pos->tolerance, "tolerance", true,
								 o->solver == FIT_SOLVER_LBFGS ? DEFAULT_TOLERANCE_LBFGS : DEFAULT_TOLERANCE_PAPER);
	o->step_given = given(fcinfo, pos->step);
	o->step = positive_arg(fcinfo, pos->step, "step", false, 0.0);
	o->adaptive = bool_arg(fcinfo, pos->adaptive, !o->step_given);
	o->update = choice_arg(fcinfo, pos->update, "update", fit_update_names, 2, FIT_UPDATE_STGD);
	o->retraction = choice_arg(fcinfo, pos->retraction, "retraction", fit_retraction_names, 2,
							   FIT_RETRACT_POLAR);
	o->init = choice_arg(fcinfo, pos->init, "init", fit_init_names, 6, FIT_INIT_BEST);
	o->seed = given(fcinfo, pos->seed) ? (uint64) PG_GETARG_INT64(pos->seed) : 0;
	o->center = choice_arg(fcinfo, pos->center, "center", fit_center_names, 3, FIT_CENTER_CLIENT);
	o->scale = choice_arg(fcinfo, pos->scale, "scale", fit_scale_names, 2, FIT_SCALE_NONE);
	o->sample_weights = choice_arg(fcinfo, pos->weights, "weights", fit_weights_names, 2, 0) == 1;
	o->verbose = bool_arg(fcinfo, pos->verbose, false);
	o->hops = int_arg(fcinfo, pos->hops, "hops", 0, 1000, DEFAULT_HOPS);
}

/* A JSON number, or null for a value that does not apply. */
static void
json_number(StringInfo buf, const char *key, double x, bool applies)
{
	if (applies && isfinite(x))
		appendStringInfo(buf, ", \"%s\": %.17g", key, x);
	else
		appendStringInfo(buf, ", \"%s\": null", key);
}

char *
fit_options_json(const FitOptions *o)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfo(&buf, "{\"method\": \"%s\", \"solver\": \"%s\", \"rounds\": %d",
					 fit_method_names[o->method], fit_solver_names[o->solver], o->rounds);
	json_number(&buf, "tolerance", o->tolerance, true);
	json_number(&buf, "step", o->step, o->step_given);
	appendStringInfo(&buf, ", \"adaptive\": %s, \"update\": \"%s\", \"retraction\": \"%s\"",
					 o->adaptive ? "true" : "false", fit_update_names[o->update],
					 fit_retraction_names[o->retraction]);
	appendStringInfo(&buf, ", \"init\": \"%s\", \"seed\": %lld, \"center\": \"%s\", \"weights\": \"%s\", \"scale\": \"%s\", \"hops\": %d}",
					 fit_init_names[o->init], (long long) (int64) o->seed,
					 fit_center_names[o->center], fit_weights_names[o->sample_weights ? 1 : 0],
					 fit_scale_names[o->scale], o->hops);
	return buf.data;
}
