/* The forms of an option every nccl-lens command accepts, parsed in one
 * place (each command's loop keeps its own option names): "--name VALUE",
 * "--name=VALUE", "-x VALUE", "-xVALUE", and "--" ending the options (what
 * follows is a path even if it starts with '-'). Exit statuses: 0 done,
 * 1 the work failed (unreadable trace, write error), 2 a usage error. */
#ifndef NCCL_LENS_CLI_OPT_H
#define NCCL_LENS_CLI_OPT_H

#define LENS_EXIT_USAGE 2

/* Whether argv[*i] is option lng (e.g. "--output") or its short form "-s"
 * (s = 0: none) with a value. 1: *val set and *i advanced past a separate
 * value; 0: not this option; -1 after the usage error "LNG needs VALUE_WORDS"
 * (what the value is, e.g. "a file name"). */
int lens_opt_val(const char *cmd, int *i, int argc, char **argv, const char *lng, char s, const char *what,
                 const char **val);
/* Whether a is the flag lng (or "-s"; s = 0: none). */
int lens_opt_flag(const char *a, const char *lng, char s);

/* A number in [lo, hi] (NaN, inf and trailing text refused): 0, or -1. */
int lens_opt_num(const char *v, double lo, double hi, double *out);

#endif
