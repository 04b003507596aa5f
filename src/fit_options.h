/*
 * fit_options.h -- the options of a fit, parsed and checked once (fit_options.c)
 *
 * perpca_fit and perpca_fit_federated take the same options under the same
 * names; each passes the positions of its arguments.  A NULL option means
 * its default, so wrappers (perpca_train) can pass their arguments through.
 */
#ifndef PERPCA_FIT_OPTIONS_H
#define PERPCA_FIT_OPTIONS_H

#include "fmgr.h"

#include "fit_types.h"

/* Names of the option values, in enum order (fit_options.c). */
extern const char *const fit_method_names[4];
extern const char *const fit_solver_names[2];
extern const char *const fit_init_names[6];
extern const char *const fit_center_names[3];
extern const char *const fit_scale_names[2];
extern const char *const fit_update_names[2];
extern const char *const fit_retraction_names[2];
extern const char *const fit_weights_names[2];

/* Argument positions of the options in one SQL function (-1: not an argument). */
typedef struct FitArgPositions
{
	int			n_global;
	int			n_local;
	int			rounds;
	int			tolerance;
	int			step;
	int			update;
	int			retraction;
	int			init;
	int			seed;
	int			center;
	int			weights;
	int			method;
	int			verbose;
	int			adaptive;
	int			solver;
	int			scale;
	int			hops;
} FitArgPositions;

/* Read and check every option; defaults for NULL or absent arguments. */
extern void fit_options_parse(FunctionCallInfo fcinfo, const FitArgPositions *pos,
							  FitOptions *opts);

/* The effective options as a JSON object (text). */
extern char *fit_options_json(const FitOptions *opts);

/* Index of value among names, or invalid_parameter_value listing the valid values. */
extern int	fit_choice(const char *value, const char *option, const char *const *names,
					   int nnames);

/* A non-NULL text argument, or null_value_not_allowed naming it. */
extern char *fit_text_arg(FunctionCallInfo fcinfo, int argno, const char *what);

#endif							/* PERPCA_FIT_OPTIONS_H */
