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
 *     set at a GUC nesting level of their own and undone at once.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"

#include "client_key.h"

typedef enum KeyHow
{
	KEY_NUMERIC,				/* numeric_normalize */
	KEY_PLAIN,					/* the output function */
	KEY_FIXED_STYLE				/* the output function under fixed settings */
} KeyHow;

/* The settings that change how a value is written, and the value each key is written under. */
static const char *const key_settings[][2] = {
	{"DateStyle", "ISO, YMD"},
	{"TimeZone", "UTC"},
	{"IntervalStyle", "postgres"},
	{"extra_float_digits", "1"},
	{"bytea_output", "hex"},
};

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

	k->type = type;
	k->how = base == NUMERICOID ? KEY_NUMERIC : plain_output(base) ? KEY_PLAIN : KEY_FIXED_STYLE;
	getTypeOutputInfo(base, &outfunc, &isvarlena);
	fmgr_info_cxt(outfunc, &k->out, cxt);
}

/* The output of value under key_settings, which are undone before returning. */
static char *
fixed_style_output(ClientKeyOut *k, Datum value)
{
	int			nestlevel = NewGUCNestLevel();
	char	   *str;

	for (int i = 0; i < (int) lengthof(key_settings); i++)
		(void) set_config_option(key_settings[i][0], key_settings[i][1], PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	str = OutputFunctionCall(&k->out, value);
	AtEOXact_GUC(true, nestlevel);
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
