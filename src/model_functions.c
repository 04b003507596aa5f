/*
 * model_functions.c -- SQL functions on a stored model read by name
 *
 * The model is found, checked and read by model_read.c (never with SQL, so
 * the model's owner cannot make a caller run her code) and cached per
 * backend.  Each calling expression keeps a ModelBinding in fn_extra.  The
 * binding is checked against the database only when the snapshot changes (in
 * practice once per statement): then the model's tables are looked up and
 * checked again, its version read, and the cache reloads the model if it was
 * replaced.  Rows of the same statement use the bound data directly, so the
 * per-row cost is that of the pure array functions plus a client lookup.
 *
 * Loaded data are reference-counted: a binding holds a reference until its
 * query's memory is released, so a reload never frees data in use.
 *
 * Client keys: the model keeps them as text, the output of the key type's
 * output function (what the fit stored).  The row functions take the key in
 * any type and convert it the same way.  A key the model does not have is,
 * with unknown => 'global' (the default), projected on the global components
 * only, with one NOTICE per statement; with unknown => 'error' it is an error.
 *
 * Decomposition of a row x of client i with centre c (the client's mean,
 * the pooled mean or zero, as the fit's center option), y = D^-1 (x - c)
 * with D the diagonal of the model's scale_factors (the identity for an
 * unscaled model):
 *   scores       [U y; V_i y]                (standardized units)
 *   global part  c + D U^T U y      local part  D V_i^T V_i y
 *   residual     D (y - U^T U y - V_i^T V_i y)   (the three parts sum to x)
 *   error        ||y - U^T U y - V_i^T V_i y||^2  (standardized units, what the fit minimized)
 * U holds the global and V_i the local components as rows.  A client the
 * model has never seen is projected on the global components only, centred
 * at the pooled mean under center 'client'; its local part is zero.
 *
 * Rows with missing coordinates (missing => 'observed', missing.c): the
 * scores are the posterior mean of the model's probabilistic PCA form given
 * the observed coordinates; the parts and the reconstruction follow from
 * them at every coordinate, the residual and the error are those of the
 * observed coordinates (the residual is NULL at the gaps), and
 * perpca_model_impute fills the gaps with the reconstruction.  A row with
 * fewer observed coordinates than components gets NULL (one counted NOTICE
 * per call site and query).
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "linalg.h"
#include "missing.h"
#include "model_read.h"
#include "model_rows.h"
#include "perpca.h"

PG_FUNCTION_INFO_V1(perpca_model_name_parts);
PG_FUNCTION_INFO_V1(perpca_model_name_rule);
PG_FUNCTION_INFO_V1(perpca_model_scores);
PG_FUNCTION_INFO_V1(perpca_model_global_part);
PG_FUNCTION_INFO_V1(perpca_model_local_part);
PG_FUNCTION_INFO_V1(perpca_model_reconstruct);
PG_FUNCTION_INFO_V1(perpca_model_residual);
PG_FUNCTION_INFO_V1(perpca_model_error);
PG_FUNCTION_INFO_V1(perpca_model_impute);
PG_FUNCTION_INFO_V1(perpca_similarity);
PG_FUNCTION_INFO_V1(perpca_component_info);
PG_FUNCTION_INFO_V1(perpca_model_theta);

#if PG_VERSION_NUM >= 170000
#define MY_LXID (MyProc->vxid.lxid)
#else
#define MY_LXID (MyProc->lxid)
#endif

/* Arguments of the row functions: (model, client, x[, unknown]). */
#define ARG_MODEL 0
#define ARG_CLIENT 1
#define ARG_X 2
#define ARG_UNKNOWN 3
#define ARG_MISSING 4			/* (..., unknown, missing) of the float8[] row functions */

/* What a calling expression keeps in fn_extra. */
struct ModelBinding
{
	text	   *model;			/* the model name it was bound for */
	ModelData  *data;
	MemoryContextCallback release;
	/* snapshot the binding was last checked under */
	LocalTransactionId lxid;
	TransactionId xmin;
	TransactionId xmax;
	CommandId	curcid;
	/* the client key's type and output function (set on first use) */
	Oid			key_type;
	bool		key_is_text;
	bool		key_byval;		/* keys compared as Datums before conversion */
	FmgrInfo	key_out;
	Datum		last_key;		/* the by-value key of client (when set) */
	bool		key_type_checked;	/* against data, at the first unknown key */
	/* the last client looked up, and scratch space */
	const ModelClient *client;
	double	   *y;				/* d */
	double	   *s;				/* r1 + r2max */
	double	   *out;			/* d */
	void	   *too_few;		/* missing.c's count of rows with too few (missing_too_few) */
};

const ModelData *
model_bound_data(const ModelBinding *b)
{
	return b->data;
}

double *
model_bound_scratch(ModelBinding *b, double **s)
{
	*s = b->s;
	return b->y;
}

/* ------------------------------------------------------------------------
 * The per-expression binding
 * ------------------------------------------------------------------------
 */

/* True when two text values (either may be NULL) hold the same bytes. */
static bool
same_text(const text *a, const text *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return VARSIZE_ANY_EXHDR(a) == VARSIZE_ANY_EXHDR(b) &&
		memcmp(VARDATA_ANY(a), VARDATA_ANY(b), VARSIZE_ANY_EXHDR(a)) == 0;
}

/* Memory-context callback: the binding's query is over. */
static void
binding_release(void *arg)
{
	ModelBinding *b = (ModelBinding *) arg;

	if (b->data != NULL)
		model_unref(b->data);
	b->data = NULL;
}

/* Check the model against the database and bind to its current data. */
static void
binding_refresh(ModelBinding *b, text *model, MemoryContext fcxt)
{
	ModelData  *m = model_open(model);

	if (b->data != m)
	{
		if (b->data != NULL)
			model_unref(b->data);
		m->refcount++;
		b->data = m;
		b->client = NULL;
		b->key_type_checked = false;
		b->y = MemoryContextAlloc(fcxt, sizeof(double) * m->d);
		b->out = MemoryContextAlloc(fcxt, sizeof(double) * m->d);
		b->s = MemoryContextAlloc(fcxt, sizeof(double) * (m->r1 + m->r2max));
	}
	if (!same_text(b->model, model))
	{
		b->model = MemoryContextAlloc(fcxt, VARSIZE_ANY(model));
		memcpy(b->model, model, VARSIZE_ANY(model));
	}
}

/* True when the active snapshot differs from the one the binding was checked under. */
static bool
binding_snapshot_changed(ModelBinding *b)
{
	Snapshot	snap;

	if (!ActiveSnapshotSet())
		return true;
	snap = GetActiveSnapshot();
	return b->lxid != MY_LXID || b->xmin != snap->xmin ||
		b->xmax != snap->xmax || b->curcid != snap->curcid;
}

/* Remember the active snapshot the binding was checked under. */
static void
binding_snapshot_save(ModelBinding *b)
{
	Snapshot	snap;

	b->lxid = MY_LXID;
	if (!ActiveSnapshotSet())
		return;
	snap = GetActiveSnapshot();
	b->xmin = snap->xmin;
	b->xmax = snap->xmax;
	b->curcid = snap->curcid;
}

/* The binding of this call site, checked once per snapshot and whenever the model name changes. */
ModelBinding *
model_bind(FunctionCallInfo fcinfo, text *model)
{
	FmgrInfo   *flinfo = fcinfo->flinfo;
	ModelBinding *b = (ModelBinding *) flinfo->fn_extra;

	if (b == NULL)
	{
		b = MemoryContextAllocZero(flinfo->fn_mcxt, sizeof(ModelBinding));
		b->release.func = binding_release;
		b->release.arg = b;
		MemoryContextRegisterResetCallback(flinfo->fn_mcxt, &b->release);
		flinfo->fn_extra = b;
	}
	if (b->data == NULL || binding_snapshot_changed(b) || !same_text(b->model, model))
	{
		binding_refresh(b, model, flinfo->fn_mcxt);
		binding_snapshot_save(b);
	}
	return b;
}

/* ------------------------------------------------------------------------
 * Client keys of any type, and clients the model does not know
 * ------------------------------------------------------------------------
 */

/* The key argument's type: from the call, else (no expression) as declared if not polymorphic. */
static Oid
key_arg_type(FunctionCallInfo fcinfo)
{
	Oid			type = get_fn_expr_argtype(fcinfo->flinfo, ARG_CLIENT);
	Oid		   *argtypes;
	int			nargs;

	if (OidIsValid(type))
		return type;
	get_func_signature(fcinfo->flinfo->fn_oid, &argtypes, &nargs);
	return nargs > ARG_CLIENT && argtypes[ARG_CLIENT] == TEXTOID ? TEXTOID : InvalidOid;
}

/* The key argument's type and output function, looked up once per call site. */
static void
key_type_setup(FunctionCallInfo fcinfo, ModelBinding *b)
{
	Oid			type = key_arg_type(fcinfo);
	Oid			outfunc;
	bool		isvarlena;

	if (!OidIsValid(type))
		ereport(ERROR,
				(errcode(ERRCODE_INDETERMINATE_DATATYPE),
				 errmsg("could not determine the type of the client key")));
	b->key_type = type;
	b->key_is_text = (type == TEXTOID);
	b->key_byval = get_typbyval(type);
	if (!b->key_is_text)
	{
		getTypeOutputInfo(type, &outfunc, &isvarlena);
		fmgr_info_cxt(outfunc, &b->key_out, fcinfo->flinfo->fn_mcxt);
	}
}

/* The key as the model stores it: its bytes (not terminated) and length. */
static const char *
key_text(FunctionCallInfo fcinfo, ModelBinding *b, int *len)
{
	const char *str;

	if (b->key_is_text)
	{
		text	   *t = PG_GETARG_TEXT_PP(ARG_CLIENT);

		*len = VARSIZE_ANY_EXHDR(t);
		return VARDATA_ANY(t);
	}
	str = OutputFunctionCall(&b->key_out, PG_GETARG_DATUM(ARG_CLIENT));
	*len = strlen(str);
	return str;
}

/* True when str is the canonical text of an integer ("0", "-12", not "012" or "+1"). */
static bool
is_integer_text(const char *str)
{
	const char *p = str[0] == '-' ? str + 1 : str;

	if (p[0] == '\0' || (p[0] == '0' && (p[1] != '\0' || p != str)))
		return false;
	for (; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

/* True when str is the canonical text of a uuid (lower-case, 8-4-4-4-12). */
static bool
is_uuid_text(const char *str)
{
	if (strlen(str) != 36)
		return false;
	for (int i = 0; i < 36; i++)
	{
		bool		dash = (i == 8 || i == 13 || i == 18 || i == 23);

		if (dash ? str[i] != '-' : !((str[i] >= '0' && str[i] <= '9') || (str[i] >= 'a' && str[i] <= 'f')))
			return false;
	}
	return true;
}

/* Whether a key stored as str could be the output of a value of type (true when unknown). */
static bool
key_could_be(Oid type, const char *str)
{
	switch (type)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case OIDOID:
			return is_integer_text(str);
		case UUIDOID:
			return is_uuid_text(str);
		default:
			return true;
	}
}

/*
 * Keys of this type can never match the model's: none of its keys is the
 * text of a value of the type (checked for integer and uuid keys).  An error,
 * whatever the unknown option: every row would miss.
 */
static void
key_type_check(ModelBinding *b)
{
	const ModelData *m = b->data;

	b->key_type_checked = true;
	if (b->key_is_text || m->nclients == 0)
		return;
	for (int i = 0; i < m->nclients; i++)
		if (key_could_be(b->key_type, m->clients[i].name))
			return;
	ereport(ERROR,
			(errcode(ERRCODE_DATATYPE_MISMATCH),
			 errmsg("client keys of type %s cannot match model \"%s\"",
					format_type_be(b->key_type), text_to_cstring(b->model)),
			 errdetail("None of the model's %d client keys is the text of a %s value, for example \"%s\".",
					   m->nclients, format_type_be(b->key_type), m->clients[0].name),
			 errhint("Pass the key in the type of the training query's client column, or as text.")));
}

typedef enum UnknownMode
{
	UNKNOWN_GLOBAL,				/* global components only, one NOTICE per statement */
	UNKNOWN_ERROR				/* an error */
} UnknownMode;

/* The unknown option (absent under the 0.1.0 signatures: 'global'). */
static UnknownMode
unknown_arg(FunctionCallInfo fcinfo)
{
	text	   *t;
	int			len;

	if (PG_NARGS() <= ARG_UNKNOWN)
		return UNKNOWN_GLOBAL;
	t = PG_GETARG_TEXT_PP(ARG_UNKNOWN);
	len = VARSIZE_ANY_EXHDR(t);
	if (len == 6 && memcmp(VARDATA_ANY(t), "global", 6) == 0)
		return UNKNOWN_GLOBAL;
	if (len == 5 && memcmp(VARDATA_ANY(t), "error", 5) == 0)
		return UNKNOWN_ERROR;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown must be 'global' or 'error', not \"%s\"", text_to_cstring(t))));
	return UNKNOWN_GLOBAL;		/* keep the compiler quiet */
}

/* The models an unknown-client NOTICE was raised for in the current statement. */
#define NOTICED_MAX 16
static struct
{
	LocalTransactionId lxid;
	TimestampTz statement;
	int			n;
	Oid			info_oid[NOTICED_MAX];
} unknown_noticed;

/* True the first time per statement for a model (and for up to NOTICED_MAX models). */
static bool
unknown_first_in_statement(Oid info_oid)
{
	TimestampTz now = GetCurrentStatementStartTimestamp();

	if (unknown_noticed.lxid != MY_LXID || unknown_noticed.statement != now)
	{
		unknown_noticed.lxid = MY_LXID;
		unknown_noticed.statement = now;
		unknown_noticed.n = 0;
	}
	for (int i = 0; i < unknown_noticed.n; i++)
		if (unknown_noticed.info_oid[i] == info_oid)
			return false;
	if (unknown_noticed.n == NOTICED_MAX)
		return false;
	unknown_noticed.info_oid[unknown_noticed.n++] = info_oid;
	return true;
}

/* A client the model does not know: an error, or the statement's one NOTICE. */
static void
unknown_client(ModelBinding *b, UnknownMode mode, const char *key, int len)
{
	int			n = b->data->nclients;

	if (!b->key_type_checked)
		key_type_check(b);
	if (mode == UNKNOWN_ERROR)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("client \"%s\" is not in model \"%s\"", pnstrdup(key, len), text_to_cstring(b->model)),
				 errdetail("The model knows %d client%s%s%s%s; keys are compared as text.", n,
						   n == 1 ? "" : "s", n > 0 ? ", for example \"" : "",
						   n > 0 ? b->data->clients[0].name : "", n > 0 ? "\"" : ""),
				 errhint("Check the key, or add the client with perpca_personalize().")));
	if (!unknown_first_in_statement(b->data->info_oid))
		return;
	ereport(NOTICE,
			(errmsg("client \"%s\" is not in model \"%s\": projected on the global components only",
					pnstrdup(key, len), text_to_cstring(b->model)),
			 errdetail("The model knows %d client%s. Further unknown clients in this statement are not reported.",
					   n, n == 1 ? "" : "s"),
			 errhint("Pass unknown => 'error' to make an unknown client an error, or add the client with perpca_personalize().")));
}

/* The bound model's client for the key argument, or NULL for one it does not know. */
static const ModelClient *
model_client(FunctionCallInfo fcinfo, ModelBinding *b)
{
	return model_bound_client(fcinfo, b, unknown_arg(fcinfo) == UNKNOWN_ERROR);
}

const ModelClient *
model_bound_client(FunctionCallInfo fcinfo, ModelBinding *b, bool unknown_error)
{
	UnknownMode mode = unknown_error ? UNKNOWN_ERROR : UNKNOWN_GLOBAL;
	int			len;
	const char *key;

	if (b->key_type == InvalidOid)
		key_type_setup(fcinfo, b);
	/* Rows come grouped by client: the same by-value key needs no conversion. */
	if (b->client != NULL && b->key_byval && !b->key_is_text &&
		PG_GETARG_DATUM(ARG_CLIENT) == b->last_key)
		return b->client;
	key = key_text(fcinfo, b, &len);
	if (b->client != NULL && b->client->namelen == len &&
		memcmp(b->client->name, key, len) == 0)
		return b->client;
	b->client = model_find_client(b->data, key, len);
	b->last_key = PG_GETARG_DATUM(ARG_CLIENT);
	if (b->client == NULL)
		unknown_client(b, mode, key, len);
	return b->client;
}

/* ------------------------------------------------------------------------
 * Projection of one row
 * ------------------------------------------------------------------------
 */

/* One row decomposed: the centre, y = x - centre, scores s = [U y; V_i y]. */
typedef struct RowProjection
{
	const ModelData *m;
	const ModelClient *c;		/* NULL: unseen client */
	const double *center;		/* NULL: no centering */
	int			r2;				/* local components used (0 for an unseen client) */
	bool		isnull;			/* too few observed coordinates: the result is NULL */
	double	   *y;
	double	   *s;
	double	   *out;
} RowProjection;

/* How a row is scored: its gaps, and what to do about them. */
typedef struct RowGaps
{
	bool		posterior;		/* the posterior mean (missing => 'observed', impute) */
	const bool *obs;			/* observed coordinates (NULL: all) */
	int			nobs;			/* their number */
	bool		impute;			/* no NULL for too few observed coordinates */
	bool		skip;			/* a row with gaps under missing => 'skip': NULL, counted */
} RowGaps;

static const RowGaps complete_row = {false, NULL, 0, false, false};

/*
 * Bind the model, find the client, centre x (d values, 0 at the gaps) and
 * compute its scores: the projection, or under g->posterior the posterior
 * mean given the observed coordinates, with y at the gaps set to the
 * reconstruction (a zero residual there).  A row with fewer observed
 * coordinates than scores gets p->isnull, unless g->impute.
 */
static void
row_project(FunctionCallInfo fcinfo, const double *x, int d, const RowGaps *g, RowProjection *p)
{
	ModelBinding *b = model_bind(fcinfo, PG_GETARG_TEXT_PP(ARG_MODEL));
	const ModelData *m = b->data;

	p->m = m;
	p->c = model_client(fcinfo, b);
	if (d != m->d)
		perpca_dim_mismatch(m->d, d, "x");
	if (m->center == CENTER_NONE)
		p->center = NULL;
	else if (m->center == CENTER_CLIENT && p->c != NULL)
		p->center = p->c->mean;
	else
		p->center = m->global_mean;
	p->r2 = p->c ? p->c->r2 : 0;
	if (g->skip)
	{
		p->isnull = true;
		missing_skip_row(fcinfo, &b->too_few);
		return;
	}
	p->y = b->y;
	p->s = b->s;
	p->out = b->out;
	for (int i = 0; i < d; i++)
		p->y[i] = p->center ? x[i] - p->center[i] : x[i];
	if (m->scale != NULL)
		for (int i = 0; i < d; i++)
			p->y[i] /= m->scale[i];
	p->isnull = false;
	if (!g->posterior)
	{
		linalg_matvec(false, m->r1, d, 1.0, m->U, p->y, 0.0, p->s);
		if (p->r2 > 0)
			linalg_matvec(false, p->r2, d, 1.0, p->c->V, p->y, 0.0, p->s + m->r1);
		return;
	}
	if (g->obs != NULL && g->nobs < m->r1 + p->r2 && !g->impute)
	{
		p->isnull = true;
		missing_too_few(fcinfo, &b->too_few, m->r1 + p->r2);
		return;
	}
	missing_posterior(m, p->c, p->y, g->obs, p->s);
	if (g->obs == NULL)
		return;
	/* y at the gaps: the reconstruction, so that the residual is 0 there */
	memset(p->out, 0, sizeof(double) * d);
	linalg_matvec(true, m->r1, d, 1.0, m->U, p->s, 1.0, p->out);
	if (p->r2 > 0)
		linalg_matvec(true, p->r2, d, 1.0, p->c->V, p->s + m->r1, 1.0, p->out);
	for (int i = 0; i < d; i++)
		if (!g->obs[i])
			p->y[i] = p->out[i];
}

/* out = base (or zero) + alpha (U^T s_global if global) + alpha (V^T s_local if local). */
static void
row_combine(RowProjection *p, const double *base, double alpha, bool global, bool local)
{
	int			d = p->m->d;

	if (base)
		memcpy(p->out, base, sizeof(double) * d);
	else
		memset(p->out, 0, sizeof(double) * d);
	if (global)
		linalg_matvec(true, p->m->r1, d, alpha, p->m->U, p->s, 1.0, p->out);
	if (local && p->r2 > 0)
		linalg_matvec(true, p->r2, d, alpha, p->c->V, p->s + p->m->r1, 1.0, p->out);
}

/* out = (centre if with_center) + D (U^T s_global if global + V^T s_local if local): data units. */
static void
row_part(RowProjection *p, bool global, bool local, bool with_center)
{
	const double *scale = p->m->scale;

	if (scale == NULL)
	{
		row_combine(p, with_center ? p->center : NULL, 1.0, global, local);
		return;
	}
	row_combine(p, NULL, 1.0, global, local);
	for (int i = 0; i < p->m->d; i++)
		p->out[i] = p->out[i] * scale[i] + (with_center && p->center ? p->center[i] : 0.0);
}

/* out = the residual y - U^T s_global - V^T s_local, times D when in data units. */
static void
row_residual(RowProjection *p, bool data_units)
{
	row_combine(p, p->y, -1.0, true, true);
	if (data_units && p->m->scale != NULL)
		for (int i = 0; i < p->m->d; i++)
			p->out[i] *= p->m->scale[i];
}

/*
 * The row functions on the row x (d values, 0 at the gaps g) of the call's
 * model and client: op's result, *n values (1 for the error) in memory of
 * the call site, valid until its next call; NULL when the row has too few
 * observed coordinates.
 */
static const double *
model_row(FunctionCallInfo fcinfo, PerpcaRowOp op, const double *x, int d, const RowGaps *g, int *n)
{
	RowProjection p;

	row_project(fcinfo, x, d, g, &p);
	if (p.isnull)
		return NULL;
	*n = p.m->d;
	switch (op)
	{
		case PERPCA_ROW_SCORES:
			*n = p.m->r1 + p.r2;
			return p.s;
		case PERPCA_ROW_GLOBAL_PART:
			row_part(&p, true, false, true);
			break;
		case PERPCA_ROW_LOCAL_PART:
			row_part(&p, false, true, false);
			break;
		case PERPCA_ROW_RECONSTRUCT:
			row_part(&p, true, true, true);
			break;
		case PERPCA_ROW_RESIDUAL:
			row_residual(&p, true);
			break;
		case PERPCA_ROW_ERROR:
			row_residual(&p, false);
			p.out[0] = linalg_dot(p.m->d, p.out, p.out);
			*n = 1;
			break;
	}
	return p.out;
}

/*
 * The row functions on the complete row x (d finite values): perpca_vector's
 * overloads share them.
 */
const double *
perpca_model_row(FunctionCallInfo fcinfo, PerpcaRowOp op, const double *x, int d, int *n)
{
	return model_row(fcinfo, op, x, d, &complete_row, n);
}

/*
 * The float8[] row argument read under the call's missing option: its
 * values (0 at the gaps), its dimension and its gaps.
 */
static const double *
model_row_arg(FunctionCallInfo fcinfo, int *d, RowGaps *g)
{
	PerpcaMissing mode = missing_arg(fcinfo, ARG_MISSING);
	const double *x;

	g->nobs = missing_read_row(PG_GETARG_ARRAYTYPE_P(ARG_X), mode, d, &x, &g->obs);
	g->posterior = mode == PERPCA_MISSING_OBSERVED;
	g->impute = false;
	g->skip = mode == PERPCA_MISSING_SKIP && g->obs != NULL;
	return x;
}

/* A row function on a float8[] row: its result as float8[] (NULL at the residual's gaps). */
static Datum
model_row_array(FunctionCallInfo fcinfo, PerpcaRowOp op)
{
	int			d,
				n;
	RowGaps		g;
	const double *x = model_row_arg(fcinfo, &d, &g);
	const double *out = model_row(fcinfo, op, x, d, &g, &n);

	if (out == NULL)
		PG_RETURN_NULL();
	if (op == PERPCA_ROW_RESIDUAL && g.obs != NULL)
		PG_RETURN_ARRAYTYPE_P(missing_build_masked(out, g.obs, n));
	PG_RETURN_ARRAYTYPE_P(perpca_vector_build(out, n));
}

/* Scores of x: the global scores, then the client's local scores. */
Datum
perpca_model_scores(PG_FUNCTION_ARGS)
{
	return model_row_array(fcinfo, PERPCA_ROW_SCORES);
}

/* Global part of x: centre + U^T U (x - centre), what the clients share. */
Datum
perpca_model_global_part(PG_FUNCTION_ARGS)
{
	return model_row_array(fcinfo, PERPCA_ROW_GLOBAL_PART);
}

/* Local part of x: V_i^T V_i (x - centre), what is unique to the client. */
Datum
perpca_model_local_part(PG_FUNCTION_ARGS)
{
	return model_row_array(fcinfo, PERPCA_ROW_LOCAL_PART);
}

/* Reconstruction of x: its global part plus its local part. */
Datum
perpca_model_reconstruct(PG_FUNCTION_ARGS)
{
	return model_row_array(fcinfo, PERPCA_ROW_RECONSTRUCT);
}

/* Residual of x: x minus its reconstruction. */
Datum
perpca_model_residual(PG_FUNCTION_ARGS)
{
	return model_row_array(fcinfo, PERPCA_ROW_RESIDUAL);
}

/* Squared norm of the (standardized) residual: the reconstruction error of x, an anomaly score. */
Datum
perpca_model_error(PG_FUNCTION_ARGS)
{
	int			d,
				n;
	RowGaps		g;
	const double *x = model_row_arg(fcinfo, &d, &g);
	const double *out = model_row(fcinfo, PERPCA_ROW_ERROR, x, d, &g, &n);

	if (out == NULL)
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(out[0]);
}

/*
 * x with each missing element replaced by its conditional expectation given
 * the observed ones under the model's probabilistic form (the
 * reconstruction there, in the data's units); observed elements unchanged,
 * bit for bit.  A row with no observed element gets the client's centre.
 */
Datum
perpca_model_impute(PG_FUNCTION_ARGS)
{
	int			d,
				n;
	RowGaps		g;
	const double *x;
	const double *recon;
	double	   *filled;

	g.nobs = missing_read_row(PG_GETARG_ARRAYTYPE_P(ARG_X), PERPCA_MISSING_OBSERVED, &d, &x, &g.obs);
	g.posterior = true;
	g.impute = true;
	g.skip = false;
	if (g.obs == NULL)
	{
		/* nothing to fill (the model and the client are still checked) */
		model_row(fcinfo, PERPCA_ROW_SCORES, x, d, &complete_row, &n);
		PG_RETURN_ARRAYTYPE_P(perpca_vector_build(x, d));
	}
	recon = model_row(fcinfo, PERPCA_ROW_RECONSTRUCT, x, d, &g, &n);
	filled = palloc(sizeof(double) * d);
	for (int i = 0; i < d; i++)
		filled[i] = g.obs[i] ? x[i] : recon[i];
	PG_RETURN_ARRAYTYPE_P(perpca_vector_build(filled, d));
}

/* ------------------------------------------------------------------------
 * Client similarity
 * ------------------------------------------------------------------------
 */

/* rho between two clients' local subspaces; G is r2max x r2max scratch. */
double
model_client_distance(const ModelData *m, const ModelClient *a, const ModelClient *c, double *G)
{
	double		inner = 0.0;

	if (a == c || a->r2 + c->r2 == 0)
		return 0.0;
	if (a->r2 > 0 && c->r2 > 0)
	{
		linalg_gemm(false, true, a->r2, c->r2, m->d, 1.0, a->V, m->d,
					c->V, m->d, 0.0, G, c->r2);
		inner = linalg_dot((int64) a->r2 * c->r2, G, G);
	}
	return Max(a->r2 + c->r2 - 2.0 * inner, 0.0) / (0.5 * (a->r2 + c->r2));
}

/* The state of one perpca_similarity call: the pair to return next. */
typedef struct SimilarityScan
{
	ModelData  *m;				/* referenced until the call's memory goes */
	MemoryContextCallback unref;
	bool		all_pairs;
	int			i;
	int			j;
	Datum	   *names;			/* each client's name as text, made once */
	double	   *G;				/* r2max x r2max scratch */
	TupleDesc	desc;
} SimilarityScan;

static void
similarity_unref(void *arg)
{
	model_unref((ModelData *) arg);
}

/*
 * rho_ab = ||P_Va - P_Vb||_F^2 / r2 for each unordered pair of clients, a < b
 * (bytewise), or with all_pairs every ordered pair and each client with
 * itself.  ||P_Va - P_Vb||_F^2 = r_a + r_b - 2 ||V_a V_b^T||_F^2 and
 * r2 = (r_a + r_b) / 2 (the paper's r2 when all clients have the same local rank).
 *
 * The pairs are returned one per call (value-per-call), in bounded memory:
 * the names are made once, a pair's row in the per-call context.  Called in
 * FROM, PostgreSQL keeps the rows in a tuplestore that spills to disk beyond
 * work_mem; in the select list (or under a LIMIT there) they stream.
 */
Datum
perpca_similarity(PG_FUNCTION_ARGS)
{
	FuncCallContext *fctx;
	SimilarityScan *scan;

	if (SRF_IS_FIRSTCALL())
	{
		MemoryContext old;
		ModelData  *m;

		/* (fn_extra is the SRF's: the model is opened here, not bound) */
		m = model_open(PG_GETARG_TEXT_PP(0));
		fctx = SRF_FIRSTCALL_INIT();
		old = MemoryContextSwitchTo(fctx->multi_call_memory_ctx);
		scan = palloc0(sizeof(SimilarityScan));
		scan->m = m;
		m->refcount++;
		scan->unref.func = similarity_unref;
		scan->unref.arg = m;
		MemoryContextRegisterResetCallback(fctx->multi_call_memory_ctx, &scan->unref);
		scan->all_pairs = PG_NARGS() > 1 ? PG_GETARG_BOOL(1) : true;
		scan->j = scan->all_pairs ? 0 : 1;
		scan->names = palloc(sizeof(Datum) * Max(scan->m->nclients, 1));
		for (int c = 0; c < scan->m->nclients; c++)
			scan->names[c] = CStringGetTextDatum(scan->m->clients[c].name);
		scan->G = palloc(sizeof(double) * Max(scan->m->r2max * scan->m->r2max, 1));
		if (get_call_result_type(fcinfo, NULL, &scan->desc) != TYPEFUNC_COMPOSITE)
			elog(ERROR, "perpca_similarity must return a record");
		scan->desc = BlessTupleDesc(scan->desc);
		fctx->user_fctx = scan;
		MemoryContextSwitchTo(old);
	}
	fctx = SRF_PERCALL_SETUP();
	scan = fctx->user_fctx;
	/* the next pair: j runs over i+1.. (all_pairs: 0..), then i moves on */
	while (scan->i < scan->m->nclients && scan->j >= scan->m->nclients)
	{
		scan->i++;
		scan->j = scan->all_pairs ? 0 : scan->i + 1;
	}
	if (scan->i < scan->m->nclients)
	{
		const ModelData *m = scan->m;
		Datum		row[3];
		bool		nulls[3] = {false, false, false};

		CHECK_FOR_INTERRUPTS();
		row[0] = scan->names[scan->i];
		row[1] = scan->names[scan->j];
		row[2] = Float8GetDatum(model_client_distance(m, &m->clients[scan->i], &m->clients[scan->j], scan->G));
		scan->j++;
		SRF_RETURN_NEXT(fctx, HeapTupleGetDatum(heap_form_tuple(scan->desc, row, nulls)));
	}
	SRF_RETURN_DONE(fctx);
}

/* ------------------------------------------------------------------------
 * Component info and theta
 * ------------------------------------------------------------------------
 */

/* a / b, or NULL when either is NULL or b is 0. */
static ModelFloat
ratio(ModelFloat a, ModelFloat b)
{
	ModelFloat	r = {0.0, a.isnull || b.isnull || b.value == 0.0};

	if (!r.isnull)
		r.value = a.value / b.value;
	return r;
}

/*
 * Rows of one block of components (the global ones, or one client's local
 * ones): variance, variance / total and base + running sum / total (the
 * running sum skips NULL variances, as SQL's sum does).
 */
static void
component_info_rows(ReturnSetInfo *rsinfo, const ModelData *m, const char *client, const double *A,
					const int *number, const ModelFloat *variance, int k, ModelFloat total,
					ModelFloat base)
{
	ModelFloat	sum = {0.0, true};

	for (int j = 0; j < k; j++)
	{
		ModelFloat	share = ratio(variance[j], total);
		ModelFloat	cumulative;
		Datum		row[7];
		bool		nulls[7];

		if (!variance[j].isnull)
		{
			sum.value += variance[j].value;
			sum.isnull = false;
		}
		cumulative = ratio(sum, total);
		cumulative.isnull |= base.isnull;
		cumulative.value += base.value;
		row[0] = client ? CStringGetTextDatum(client) : (Datum) 0;
		row[1] = CStringGetTextDatum(client ? "local" : "global");
		row[2] = Int32GetDatum(number[j]);
		row[3] = Float8GetDatum(variance[j].value);
		row[4] = Float8GetDatum(share.value);
		row[5] = Float8GetDatum(cumulative.value);
		nulls[0] = client == NULL;
		nulls[1] = nulls[2] = false;
		nulls[3] = variance[j].isnull;
		nulls[4] = share.isnull;
		nulls[5] = cumulative.isnull;
		row[6] = CStringGetTextDatum(model_top_features(m, A + (int64) j * m->d, COMPONENT_TOP_FEATURES));
		nulls[6] = false;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row, nulls);
	}
}

/*
 * Variance, explained-variance ratio and cumulative ratio of each component:
 * global components against the fit's weighted mean total variance, local
 * ones against their client's total variance, cumulated on top of the
 * client's global share.  Rows: global first, then clients bytewise.
 */
Datum
perpca_component_info(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const ModelData *m;
	ModelFloat	zero = {0.0, false};

	InitMaterializedSRF(fcinfo, 0);
	m = model_bind(fcinfo, PG_GETARG_TEXT_PP(0))->data;
	component_info_rows(rsinfo, m, NULL, m->U, m->global_number, m->global_variance, m->r1,
						m->total_variance, zero);
	for (int i = 0; i < m->nclients; i++)
	{
		const ModelClient *c = &m->clients[i];

		component_info_rows(rsinfo, m, c->name, c->V, c->number, c->variance, c->r2,
							c->total_variance, c->global_ratio);
	}
	return (Datum) 0;
}

/* The model's theta_est, with a hint when it is below the threshold. */
Datum
perpca_model_theta(PG_FUNCTION_ARGS)
{
	double		threshold = PG_GETARG_FLOAT8(1);
	const ModelData *m = model_bind(fcinfo, PG_GETARG_TEXT_PP(0))->data;
	TupleDesc	desc;
	Datum		values[2];
	bool		nulls[2] = {m->theta_est.isnull, true};

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "perpca_model_theta must return a record");
	desc = BlessTupleDesc(desc);
	values[0] = Float8GetDatum(m->theta_est.value);
	values[1] = (Datum) 0;
	if (!m->theta_est.isnull && m->theta_est.value < threshold)
	{
		values[1] = CStringGetTextDatum("theta_est is small: the local components of the clients are nearly aligned, so global and local parts are not separable; lower n_local");
		nulls[1] = false;
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

/* perpca_internal.model_name_parts(model text) RETURNS text[]: {[schema,] base} (model_read.h). */
Datum
perpca_model_name_parts(PG_FUNCTION_ARGS)
{
	List	   *parts = model_name_parts(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	Datum		elems[2];
	int			n = 0;
	ListCell   *lc;

	foreach(lc, parts)
		elems[n++] = CStringGetTextDatum((char *) lfirst(lc));
	PG_RETURN_ARRAYTYPE_P(construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT));
}

/* perpca_internal.perpca_model_name_rule() RETURNS text: MODEL_NAME_RULE; 0.3.0 dropped the SQL
 * function, the SQL of 0.2.0 (sql/released) names the symbol until ALTER EXTENSION UPDATE. */
Datum
perpca_model_name_rule(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(cstring_to_text(MODEL_NAME_RULE));
}
