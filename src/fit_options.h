/*
 * fit_options.h -- the options of a fit: declared once (FIT_OPTION_LIST,
 * fit_types.h), parsed once, defaulted once (fit_options.c)
 *
 * SQL functions take them as named arguments, read by name
 * (fit_options_from_call), so no C file lists a function's argument
 * positions.  Internally options travel as one jsonb object, the same names
 * as keys; NULL or absent means the default.
 */
#ifndef PERPCA_FIT_OPTIONS_H
#define PERPCA_FIT_OPTIONS_H

#include "fmgr.h"
#include "utils/jsonb.h"

#include "fit.h"
#include "fit_start.h"
#include "fit_types.h"

/* Names of the option values, in enum order (fit_options.c). */
extern const char *const fit_method_names[4];
extern const char *const fit_update_names[2];
extern const char *const fit_retraction_names[2];
extern const char *const fit_weights_names[2];

/*
 * The options given to the SQL function being called, by argument name: a
 * JSON object of the arguments that are options and not NULL.  Arguments
 * that are not options (query, model, shards, ...) are left out.
 */
extern Jsonb *fit_options_from_call(FunctionCallInfo fcinfo);

/*
 * Read and check the options of a JSON object (keys that are not options
 * are ignored; NULL and absent keys take the default).  Raises 22023 naming
 * an invalid option, 22004 for a missing rank; returns when all are valid.
 */
extern void fit_options_parse(Jsonb *given, FitOptions *opts);

/* fit_options_parse(fit_options_from_call(fcinfo), opts). */
extern void fit_options_parse_call(FunctionCallInfo fcinfo, FitOptions *opts);

/* The same for a function without rank arguments (a rank scan sets n_global
 * and n_local per pair; they are left 0 and not checked here). */
extern void fit_options_parse_call_no_ranks(FunctionCallInfo fcinfo, FitOptions *opts);

/* The effective options as jsonb, without verbose and start (and the ranks unless with_ranks): what a model stores. */
extern Jsonb *fit_options_jsonb(const FitOptions *opts, bool with_ranks);

/* Index of value among names, or invalid_parameter_value listing the valid values. */
extern int	fit_choice(const char *value, const char *option, const char *const *names,
					   int nnames);

/* A non-NULL text argument, or null_value_not_allowed naming it. */
extern char *fit_text_arg(FunctionCallInfo fcinfo, int argno, const char *what);

#endif							/* PERPCA_FIT_OPTIONS_H */
