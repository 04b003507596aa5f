/*
 * client_key.h -- a client's key as a model stores and compares it
 * (client_key.c)
 *
 * A model keeps each client's key as text: the output of the key type's
 * output function, written the same way whatever the session's settings
 * (dates in ISO, times in UTC, intervals in the postgres style, floats
 * shortest-exact, bytea in hex) and, for numeric, without trailing zeros.
 * So a key matches the model's whenever it equals one of its keys: true and
 * 't', 1.0 and 1.00, a timestamptz read in any TimeZone.  The conversion is
 * C and resolves nothing by name: no cast, no function looked up by its
 * name, nothing another role can plant (output functions are C functions
 * only a superuser can create).
 */
#ifndef PERPCA_CLIENT_KEY_H
#define PERPCA_CLIENT_KEY_H

#include "postgres.h"

#include "fmgr.h"

/* How one key type is written (set up once per type, then per value). */
typedef struct ClientKeyOut
{
	int			how;			/* client_key.c's KeyHow */
	FmgrInfo	out;			/* the base type's output function */
} ClientKeyOut;

/* Set k up for keys of type (its output function in cxt). */
extern void client_key_prepare(ClientKeyOut *k, Oid type, MemoryContext cxt);

/* The key value as the model stores it (palloc'd in the current context). */
extern char *client_key_text(ClientKeyOut *k, Datum value);

/* The same, for one value of type (set-up each call: for a few keys). */
extern char *client_key_text_of(Oid type, Datum value);

#endif							/* PERPCA_CLIENT_KEY_H */
