/*
 * client_key.c -- a client's key as a model stores and compares it
 * (client_key.h)
 *
 * Three ways to write a key, chosen once per type:
 *   - numeric: numeric_normalize(), the digits without trailing zeros, so
 *     that 1.0 and 1.00 (equal numerics) are one key;
 *   - types whose output does not depend on a setting (text and the other
 *     character types, integers, boolean, uuid, network addresses, enums):
 *     their output function as it is;
 *   - every other type (dates and times, floats, bytea, composites,
 *     arrays, ranges, ...): their output function under fixed settings,
 *     set for the call and put back at once.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "pgtime.h"
#include "utils/bytea.h"
#include "utils/float.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"

#include "client_key.h"

typedef enum KeyHow
{
	KEY_NUMERIC,				/* numeric_normalize */
	KEY_PLAIN,					/* the output function */
	KEY_FIXED_STYLE				/* the output function under fixed settings */
} KeyHow;

/* Whether values of base type are written the same under any setting. */
static bool
plain_output(Oid base)
{
	switch (base)
	{
		case TEXTOID:
		case VARCHAROID:
		case BPCHAROID:
		case NAMEOID:
		case CHAROID:
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case OIDOID:
		case BOOLOID:
		case UUIDOID:
		case INETOID:
		case CIDROID:
		case MACADDROID:
		case MACADDR8OID:
			return true;
		default:
			return type_is_enum(base);
	}
}

void
client_key_prepare(ClientKeyOut *k, Oid type, MemoryContext cxt)
{
	Oid			base = getBaseType(type);
	Oid			outfunc;
	bool		isvarlena;

	k->how = base == NUMERICOID ? KEY_NUMERIC : plain_output(base) ? KEY_PLAIN : KEY_FIXED_STYLE;
	getTypeOutputInfo(base, &outfunc, &isvarlena);
	fmgr_info_cxt(outfunc, &k->out, cxt);
}

/*
 * The settings that change how a value is written, as the server keeps them
 * (the variables behind DateStyle, TimeZone, IntervalStyle,
 * extra_float_digits and bytea_output), and the values keys are written
 * under.  They are set for the one output call and put back whatever
 * happens: no GUC is changed, so this works in a parallel worker too.
 */
typedef struct KeySettings
{
	int			date_style;
	int			date_order;
	pg_tz	   *timezone;
	int			interval_style;
	int			float_digits;
	int			bytea;
} KeySettings;

static void
key_settings_swap(KeySettings *s)
{
	KeySettings now = {DateStyle, DateOrder, session_timezone, IntervalStyle, extra_float_digits, bytea_output};

	DateStyle = s->date_style;
	DateOrder = s->date_order;
	session_timezone = s->timezone;
	IntervalStyle = s->interval_style;
	extra_float_digits = s->float_digits;
	bytea_output = s->bytea;
	*s = now;
}

/* The output of value under fixed settings (ISO dates, UTC, ...). */
static char *
fixed_style_output(ClientKeyOut *k, Datum value)
{
	static pg_tz *utc = NULL;
	KeySettings fixed;
	char	   *volatile str = NULL;

	if (utc == NULL && (utc = pg_tzset("UTC")) == NULL)
		elog(ERROR, "time zone \"UTC\" not found");
	fixed = (KeySettings) {USE_ISO_DATES, DATEORDER_YMD, utc, INTSTYLE_POSTGRES, 1, BYTEA_OUTPUT_HEX};
	key_settings_swap(&fixed);
	PG_TRY();
	{
		str = OutputFunctionCall(&k->out, value);
	}
	PG_FINALLY();
	{
		key_settings_swap(&fixed);
	}
	PG_END_TRY();
	return str;
}

char *
client_key_text(ClientKeyOut *k, Datum value)
{
	switch ((KeyHow) k->how)
	{
		case KEY_NUMERIC:
			return numeric_normalize(DatumGetNumeric(value));
		case KEY_PLAIN:
			return OutputFunctionCall(&k->out, value);
		case KEY_FIXED_STYLE:
			break;
	}
	return fixed_style_output(k, value);
}

char *
client_key_text_of(Oid type, Datum value)
{
	ClientKeyOut k;

	client_key_prepare(&k, type, CurrentMemoryContext);
	return client_key_text(&k, value);
}
