/*
 * model_bind.c -- a calling expression bound to a stored model (model_bind.h)
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
 * Client keys: the model keeps them as text, written by client_key.c (what
 * the fit stored).  The row functions take the key in any type (argument 1)
 * and write it the same way.  A key the model does not have is, with
 * unknown => 'global' (the default), projected on the global components
 * only, with one NOTICE per statement; with unknown => 'error' it is an
 * error.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

#include "error_kinds.h"
#include "linalg.h"
#include "model_bind.h"

#if PG_VERSION_NUM >= 170000
#define MY_LXID (MyProc->vxid.lxid)
#else
#define MY_LXID (MyProc->lxid)
#endif

/* The client key argument of the functions that bind a model: (model, client, ...). */
#define ARG_CLIENT 1

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

/*
 * The key argument's type (from the call, else, with no expression, as
 * declared if not polymorphic) and how it is written, looked up once per
 * call site.
 */
static void
key_type_setup(FunctionCallInfo fcinfo, ModelBinding *b)
{
	Oid			type = get_fn_expr_argtype(fcinfo->flinfo, ARG_CLIENT);
	Oid		   *argtypes;
	int			nargs;

	if (!OidIsValid(type))
	{
		get_func_signature(fcinfo->flinfo->fn_oid, &argtypes, &nargs);
		if (nargs <= ARG_CLIENT || argtypes[ARG_CLIENT] != TEXTOID)
			ereport(ERROR,
					(errcode(PERPCA_ERRCODE_UNKNOWN_TYPE),
					 errmsg("could not determine the type of the client key")));
		type = TEXTOID;
	}
	b->key_type = type;
	b->key_is_text = (type == TEXTOID);
	b->key_byval = get_typbyval(type);
	if (!b->key_is_text)
		client_key_prepare(&b->key_out, type, fcinfo->flinfo->fn_mcxt);
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
	str = client_key_text(&b->key_out, PG_GETARG_DATUM(ARG_CLIENT));
	*len = strlen(str);
	return str;
}

/*
 * Whether a key stored as str could be the output of a value of type: the
 * canonical text of an integer ("0", "-12", not "012" or "+1"), of a uuid
 * (lower-case, 8-4-4-4-12); true for the types not checked.
 */
static bool
key_could_be(Oid type, const char *str)
{
	const char *p = str + (str[0] == '-');

	switch (type)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case OIDOID:
			return p[0] != '\0' && strspn(p, "0123456789") == strlen(p) &&
				!(p[0] == '0' && (p[1] != '\0' || p != str));
		case UUIDOID:
			if (strlen(str) != 36 || strspn(str, "0123456789abcdef-") != 36)
				return false;
			for (int i = 0; i < 36; i++)
				if ((str[i] == '-') != (i == 8 || i == 13 || i == 18 || i == 23))
					return false;
			return true;
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
			(errcode(PERPCA_ERRCODE_WRONG_TYPE),
			 errmsg("client keys of type %s cannot match model \"%s\"",
					format_type_be(b->key_type), text_to_cstring(b->model)),
			 errdetail("None of the model's %d client keys is the text of a %s value, for example \"%s\".",
					   m->nclients, format_type_be(b->key_type), m->clients[0].name),
			 errhint("Pass the key in the type of the training query's client column, or as text.")));
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

/* A client model m does not know: an error, or the statement's one NOTICE (global components only). */
static void
unknown_client(const ModelData *m, const text *model, bool unknown_error, const char *key, int len)
{
	int			n = m->nclients;

	if (unknown_error)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_UNDEFINED),
				 errmsg("client \"%s\" is not in model \"%s\"", pnstrdup(key, len), text_to_cstring(model)),
				 errdetail("The model knows %d client%s%s%s%s; keys are compared as text.", n,
						   n == 1 ? "" : "s", n > 0 ? ", for example \"" : "",
						   n > 0 ? m->clients[0].name : "", n > 0 ? "\"" : ""),
				 errhint("Check the key, or add the client with perpca_personalize().")));
	if (!unknown_first_in_statement(m->info_oid))
		return;
	ereport(NOTICE,
			(errmsg("client \"%s\" is not in model \"%s\": projected on the global components only",
					pnstrdup(key, len), text_to_cstring(model)),
			 errdetail("The model knows %d client%s. Further unknown clients in this statement are not reported.",
					   n, n == 1 ? "" : "s"),
			 errhint("Pass unknown => 'error' to make an unknown client an error, or add the client with perpca_personalize().")));
}

const ModelClient *
model_bound_client(FunctionCallInfo fcinfo, ModelBinding *b, bool unknown_error)
{
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
	{
		if (!b->key_type_checked)
			key_type_check(b);
		unknown_client(b->data, b->model, unknown_error, key, len);
	}
	return b->client;
}

const ModelClient *
model_client_named(const ModelData *m, const text *model, const char *key)
{
	const ModelClient *c = model_find_client(m, key, strlen(key));

	if (c == NULL)
		unknown_client(m, model, false, key, strlen(key));
	return c;
}

const char *
model_key_name(FunctionCallInfo fcinfo, bool unknown_error)
{
	const ModelClient *c = model_bound_client(fcinfo, model_bind(fcinfo, PG_GETARG_TEXT_PP(0)), unknown_error);

	if (c != NULL)
		return c->name;
	if (get_fn_expr_argtype(fcinfo->flinfo, ARG_CLIENT) == TEXTOID)
		return text_to_cstring(PG_GETARG_TEXT_PP(ARG_CLIENT));
	return NULL;
}

Datum
model_result_record(FunctionCallInfo fcinfo, Datum *values, bool *nulls)
{
	TupleDesc	desc;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "function returning a record called in a context that cannot accept it");
	return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls));
}

/* ------------------------------------------------------------------------
 * The distance between two clients' local subspaces
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
