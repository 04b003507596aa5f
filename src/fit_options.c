/*
 * fit_options.c -- the options of a fit: names, kinds, defaults, checks, JSON
 *
 * An option is a row of FIT_OPTION_LIST (fit_types.h): its field in
 * FitOptions, its row of option_defs below, and its SQL arguments (DEFAULT
 * NULL, sql/options.awk), which C reads by name.  Ranks are checked against
 * the dimension later, when the clients are known (fit_input.c).
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/json.h"
#include "utils/numeric.h"
#include "utils/syscache.h"

#include "error_kinds.h"
#include "fit.h"
#include "fit_options.h"
#include "perpca.h"
#include "row_reader.h"

PG_FUNCTION_INFO_V1(perpca_fit_options);

const char *const fit_method_names[4] = {"perpca", "dispca", "cpca", "indiv"};
static const char *const fit_center_names[3] = {"client", "global", "none"};
static const char *const fit_scale_names[2] = {"none", "standard"};
const char *const fit_update_names[2] = {"stgd", "polar"};
const char *const fit_retraction_names[2] = {"polar", "qr"};
const char *const fit_weights_names[2] = {"equal", "samples"};

typedef enum OptionKind
{
	OPT_RANK,					/* int, required, 0 .. PERPCA_MAX_DIM */
	OPT_INT,					/* int in [min, max] */
	OPT_INT64,					/* bigint */
	OPT_FLOAT,					/* finite float8 > 0 (>= 0 when min == 0) */
	OPT_BOOL,
	OPT_CHOICE,					/* text among choices, kept as its index (an enum) */
	OPT_SOLVER,					/* text among the solver table's names, kept as its row */
	OPT_TEXT					/* text, kept as a string */
} OptionKind;

typedef struct OptionDef
{
	const char *name;
	OptionKind	kind;
	size_t		offset;			/* of its field in FitOptions */
	double		dflt;			/* default (choice index, bool 0/1); NAN: set after the loop */
	const char *const *choices;
	int			nchoices;
	int			min;
	int			max;
	bool		in_json;		/* part of the effective options a model records */
	int			sql;			/* the SQL functions that take it as an argument */
} OptionDef;

/*
 * The SQL functions that take an option by name, DEFAULT NULL: a released
 * function keeps its order, and an option it does not name is added at the
 * end of each function its row names.  The ranks are each function's own.
 */
#define SQL_FIT 1				/* perpca_fit */
#define SQL_TRAIN 2				/* perpca_train */
#define SQL_FEDERATED 4			/* perpca_fit_federated */
#define SQL_RANKS 8				/* perpca_choose_ranks */
#define SQL_ALL (SQL_FIT | SQL_TRAIN | SQL_FEDERATED | SQL_RANKS)

#define FIELD(f) offsetof(FitOptions, f)

#define NO_CHOICES NULL, 0
#define CHOICES(names) names, lengthof(names)
#define OPTION_DEF(name, type, kind, dflt, choices, min, max, json, sql) \
	{#name, kind, offsetof(FitOptions, name), dflt, choices, min, max, json, sql},

/* The option table: FIT_OPTION_LIST (fit_types.h), in checking order. */
static const OptionDef option_defs[] = {FIT_OPTION_LIST(OPTION_DEF)};

#define FIELD_PTR(o, def, type) ((type *) ((char *) (o) + (def)->offset))

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
			(errcode(PERPCA_ERRCODE_OPTION),
			 errmsg("invalid value for option \"%s\": \"%s\"", option, value),
			 errhint("Valid values are %s.", valid.data)));
	return -1;					/* keep compiler quiet */
}

char *
fit_text_arg(FunctionCallInfo fcinfo, int argno, const char *what)
{
	if (argno < 0 || argno >= PG_NARGS() || PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NULL),
				 errmsg("argument \"%s\" must not be NULL", what)));
	return text_to_cstring(PG_GETARG_TEXT_PP(argno));
}

static const OptionDef *
find_def(const char *name)
{
	for (int i = 0; i < (int) lengthof(option_defs); i++)
		if (strcmp(option_defs[i].name, name) == 0)
			return &option_defs[i];
	return NULL;
}

/* ------------------------------------------------------------------------
 * From the arguments of a call, by name
 * ------------------------------------------------------------------------
 */

/* Append ", "name": value" for one argument datum of type typid. */
static void
append_arg(StringInfo buf, const char *name, Oid typid, Datum value)
{
	appendStringInfoString(buf, buf->len > 1 ? ", " : "");
	escape_json(buf, name);
	appendStringInfoString(buf, ": ");
	switch (typid)
	{
		case INT4OID:
			appendStringInfo(buf, "%d", DatumGetInt32(value));
			break;
		case INT8OID:
			appendStringInfo(buf, INT64_FORMAT, DatumGetInt64(value));
			break;
		case FLOAT8OID:
			if (isfinite(DatumGetFloat8(value)))
				appendStringInfo(buf, "%.17g", DatumGetFloat8(value));
			else				/* not a JSON number: kept as text, refused by the check */
				escape_json(buf, DatumGetCString(DirectFunctionCall1(float8out, value)));
			break;
		case BOOLOID:
			appendStringInfoString(buf, DatumGetBool(value) ? "true" : "false");
			break;
		case TEXTOID:
			escape_json(buf, TextDatumGetCString(value));
			break;
		default:
			elog(ERROR, "option \"%s\" has an argument of unexpected type %u", name, typid);
	}
}

Jsonb *
fit_options_from_call(FunctionCallInfo fcinfo)
{
	HeapTuple	proc;
	Oid		   *types;
	char	  **names;
	char	   *modes;
	int			nargs;
	StringInfoData buf;

	if (fcinfo->flinfo == NULL || !OidIsValid(fcinfo->flinfo->fn_oid))
		elog(ERROR, "fit options must be read from an SQL call");
	proc = SearchSysCache1(PROCOID, ObjectIdGetDatum(fcinfo->flinfo->fn_oid));
	if (!HeapTupleIsValid(proc))
		elog(ERROR, "cache lookup failed for function %u", fcinfo->flinfo->fn_oid);
	nargs = get_func_arg_info(proc, &types, &names, &modes);
	ReleaseSysCache(proc);
	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	for (int i = 0; i < nargs && i < PG_NARGS() && names != NULL; i++)
		if (names[i] != NULL && !PG_ARGISNULL(i) && find_def(names[i]) != NULL)
			append_arg(&buf, names[i], types[i], PG_GETARG_DATUM(i));
	appendStringInfoChar(&buf, '}');
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data)));
}

/* ------------------------------------------------------------------------
 * Parsing and checking
 * ------------------------------------------------------------------------
 */

static void
wrong_type(const OptionDef *def, const char *want)
{
	ereport(ERROR,
			(errcode(PERPCA_ERRCODE_OPTION),
			 errmsg("option \"%s\" must be %s", def->name, want)));
}

/* An integer option: numeric -> int8, then the range of the option. */
static int64
int_value(const OptionDef *def, const JsonbValue *v)
{
	int64		value;

	if (v->type != jbvNumeric)
		wrong_type(def, "an integer");
	value = DatumGetInt64(DirectFunctionCall1(numeric_int8, NumericGetDatum(v->val.numeric)));
	if (def->kind == OPT_INT64)
		return value;
	if (value < def->min || value > def->max)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_OPTION),
				 errmsg("option \"%s\" must be between %d and %d, got " INT64_FORMAT,
						def->name, def->min, def->max, value)));
	return value;
}

/* A float option: a finite number > 0 (>= 0 when min is 0). */
static double
float_value(const OptionDef *def, const JsonbValue *v)
{
	double		value;
	bool		zero_ok = def->min == 0;

	if (v->type == jbvNumeric)
		value = DatumGetFloat8(DirectFunctionCall1(numeric_float8, NumericGetDatum(v->val.numeric)));
	else if (v->type == jbvString)
		value = DatumGetFloat8(DirectFunctionCall1(float8in,
												   CStringGetDatum(pnstrdup(v->val.string.val, v->val.string.len))));
	else
		value = NAN;
	if (!isfinite(value) || value < 0.0 || (value == 0.0 && !zero_ok))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_OPTION),
				 errmsg("option \"%s\" must be a finite number %s 0", def->name, zero_ok ? ">=" : ">"),
				 errhint("Pass NULL for the default.")));
	return value;
}

static char *
string_value(const OptionDef *def, const JsonbValue *v)
{
	if (v->type != jbvString)
		wrong_type(def, "text");
	return pnstrdup(v->val.string.val, v->val.string.len);
}

/* The value of a rank option (n_global, n_local): it has no default. */
static int
rank_value(const OptionDef *def, const JsonbValue *v, bool given)
{
	if (!given)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_NULL),
				 errmsg("argument \"%s\" must not be NULL", def->name)));
	return (int) int_value(def, v);
}

/* The index of a choice option's text value among its choices. */
static int
choice_value(const OptionDef *def, const JsonbValue *v)
{
	return fit_choice(string_value(def, v), def->name, def->choices, def->nchoices);
}

/* The row of the solver table that a solver option's text value names. */
static int
solver_value(const OptionDef *def, const JsonbValue *v)
{
	const char **names = palloc(sizeof(char *) * fit_nsolvers);

	for (int i = 0; i < fit_nsolvers; i++)
		names[i] = fit_solvers[i].name;
	return fit_choice(string_value(def, v), def->name, names, fit_nsolvers);
}

/* Set one option from its JSON value (NULL: absent or null, the default). */
static void
set_option(FitOptions *o, const OptionDef *def, const JsonbValue *v)
{
	bool		given = v != NULL && v->type != jbvNull;

	switch (def->kind)
	{
		case OPT_RANK:
			*FIELD_PTR(o, def, int) = rank_value(def, v, given);
			break;
		case OPT_INT:
			*FIELD_PTR(o, def, int) = given ? (int) int_value(def, v) : (int) def->dflt;
			break;
		case OPT_INT64:
			*FIELD_PTR(o, def, uint64) = given ? (uint64) int_value(def, v) : (uint64) def->dflt;
			break;
		case OPT_FLOAT:
			*FIELD_PTR(o, def, double) = given ? float_value(def, v) : def->dflt;
			break;
		case OPT_BOOL:
			if (given && v->type != jbvBool)
				wrong_type(def, "a boolean");
			*FIELD_PTR(o, def, bool) = given ? v->val.boolean : def->dflt == 1.0;
			break;
		case OPT_CHOICE:
			*FIELD_PTR(o, def, int) = given ? choice_value(def, v) : (int) def->dflt;
			break;
		case OPT_SOLVER:
			*FIELD_PTR(o, def, int) = given ? solver_value(def, v) : (int) def->dflt;
			break;
		case OPT_TEXT:
			*FIELD_PTR(o, def, char *) = given ? string_value(def, v) : NULL;
			break;
	}
}

/* The value of key in the JSON object, or NULL. */
static JsonbValue *
json_get(Jsonb *j, const char *key)
{
	JsonbValue	k;

	if (j == NULL || !JB_ROOT_IS_OBJECT(j))
		return NULL;
	k.type = jbvString;
	k.val.string.val = (char *) key;
	k.val.string.len = strlen(key);
	return findJsonbValueFromContainer(&j->root, JB_FOBJECT, &k);
}

/* The parse; without ranks (a rank scan sets them per pair) n_global and n_local stay 0. */
static void
parse(Jsonb *given, FitOptions *o, bool ranks)
{
	if (given != NULL && !JB_ROOT_IS_OBJECT(given))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_OPTION),
				 errmsg("fit options must be a JSON object")));
	memset(o, 0, sizeof(FitOptions));
	for (int i = 0; i < (int) lengthof(option_defs); i++)
	{
		const OptionDef *def = &option_defs[i];
		JsonbValue *v = json_get(given, def->name);

		if (def->kind == OPT_RANK && !ranks)
			continue;
		set_option(o, def, v);
		if (def->offset == FIELD(step))
			o->step_given = v != NULL && v->type != jbvNull;
		if (def->offset == FIELD(method) && ranks && o->n_global + o->n_local == 0)
			ereport(ERROR,
					(errcode(PERPCA_ERRCODE_ARGUMENT),
					 errmsg("n_global and n_local are both 0: there are no components to fit"),
					 errhint("Ask for at least one global or local component.")));
		/* Defaults that depend on other options. */
		if (def->offset == FIELD(tolerance) && isnan(o->tolerance))
			o->tolerance = fit_solvers[o->solver].tolerance;
		if (def->offset == FIELD(adaptive) && (v == NULL || v->type == jbvNull))
			o->adaptive = !o->step_given;
		if (def->offset == FIELD(missing) && o->missing == PERPCA_MISSING_OBSERVED)
			row_missing_refuse(PERPCA_MISSING_OBSERVED, "a fit",
							   "A fit is made from the statistics (perpca_stats) of complete rows.",
							   "Pass missing => 'skip' to leave out rows with gaps and count them; on the fitted "
							   "model, perpca_model_scores(..., missing => 'observed') scores such rows and "
							   "perpca_model_impute() fills them.");
	}
}

void
fit_options_parse(Jsonb *given, FitOptions *o)
{
	parse(given, o, true);
}

void
fit_options_parse_call(FunctionCallInfo fcinfo, FitOptions *o)
{
	parse(fit_options_from_call(fcinfo), o, true);
}

void
fit_options_parse_call_no_ranks(FunctionCallInfo fcinfo, FitOptions *o)
{
	parse(fit_options_from_call(fcinfo), o, false);
}

/* ------------------------------------------------------------------------
 * The effective options as JSON
 * ------------------------------------------------------------------------
 */

/* The text of choice i of a choice or solver option. */
static const char *
choice_name(const OptionDef *def, int i)
{
	return def->kind == OPT_SOLVER ? fit_solvers[i].name : def->choices[i];
}

static void
append_option(StringInfo buf, const FitOptions *o, const OptionDef *def)
{
	appendStringInfoString(buf, buf->len > 1 ? ", " : "");
	escape_json(buf, def->name);
	appendStringInfoString(buf, ": ");
	switch (def->kind)
	{
		case OPT_RANK:
		case OPT_INT:
			appendStringInfo(buf, "%d", *FIELD_PTR(o, def, int));
			break;
		case OPT_INT64:
			appendStringInfo(buf, INT64_FORMAT, (int64) *FIELD_PTR(o, def, uint64));
			break;
		case OPT_FLOAT:
			/* null for a value that does not apply (a step that was not given) */
			if ((def->offset != FIELD(step) || o->step_given) && isfinite(*FIELD_PTR(o, def, double)))
				appendStringInfo(buf, "%.17g", *FIELD_PTR(o, def, double));
			else
				appendStringInfoString(buf, "null");
			break;
		case OPT_BOOL:
			appendStringInfoString(buf, *FIELD_PTR(o, def, bool) ? "true" : "false");
			break;
		case OPT_CHOICE:
		case OPT_SOLVER:
			escape_json(buf, choice_name(def, *FIELD_PTR(o, def, int)));
			break;
		case OPT_TEXT:
			if (*FIELD_PTR(o, def, char *) != NULL)
				escape_json(buf, *FIELD_PTR(o, def, char *));
			else
				appendStringInfoString(buf, "null");
			break;
	}
}

static char *
options_json(const FitOptions *o, bool with_ranks)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	for (int i = 0; i < (int) lengthof(option_defs); i++)
		if (option_defs[i].in_json || (with_ranks && option_defs[i].kind == OPT_RANK))
			append_option(&buf, o, &option_defs[i]);
	appendStringInfoChar(&buf, '}');
	return buf.data;
}

Jsonb *
fit_options_jsonb(const FitOptions *o, bool with_ranks)
{
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(options_json(o, with_ranks))));
}

/*
 * perpca_internal.fit_options(options jsonb) RETURNS jsonb: the effective
 * options (defaults filled in, ranks included), or the error of the first
 * invalid one.  For SQL callers that check options before a long query.
 */
Datum
perpca_fit_options(PG_FUNCTION_ARGS)
{
	FitOptions	o;

	fit_options_parse(PG_ARGISNULL(0) ? NULL : PG_GETARG_JSONB_P(0), &o);
	PG_RETURN_JSONB_P(fit_options_jsonb(&o, true));
}
