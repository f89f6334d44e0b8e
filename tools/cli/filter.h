/* The selection every command that reads traces takes (summary, report,
 * export, validate, net, job, hang): --comm ID|NAME, --rank LIST, --func
 * NAME, --since T, --until T. It is applied after loading and after the
 * analyses that need the whole trace (GPU clock fits, CUPTI join,
 * starvation), by narrowing the model to the selected events
 * (lens_model_keep): every table, count and view of the command then covers
 * the selection only. The pass driver loads a --since/--until window with
 * lens_model_load_window (only what the window keeps is built) and applies
 * the selection the same way after it. */
#ifndef NCCL_LENS_CLI_FILTER_H
#define NCCL_LENS_CLI_FILTER_H

#include <stddef.h>
#include <stdint.h>

#include "reader/lensread.h"

struct lens_filter {
  char **comms; size_t n_comms;   /* --comm: hex ids (0x optional) or names, as given */
  char **funcs; size_t n_funcs;   /* --func: operation names (AllReduce, Send, ...), any case */
  uint8_t *ranks; size_t n_ranks; /* --rank: ranks[r] != 0 selected; NULL all */
  int have_since, have_until;
  uint64_t since_ns, until_ns;    /* --since/--until: ns after the first event of the host */
};

/* The filter option at argv[*i], if it is one: 1 consumed (with its value),
 * 0 not a filter option, -1 after one usage error line. */
int lens_filter_option(const char *cmd, struct lens_filter *f, int *i, int argc, char **argv);
/* Checks once every option is read: 0, or -1 after one usage error line. */
int lens_filter_check(const char *cmd, const struct lens_filter *f);
int lens_filter_any(const struct lens_filter *f);
/* Narrows m to the selection and says on stderr how many events it kept.
 * 0; 2 after one usage error line (a --comm or --func that names nothing in
 * these traces, with the valid values); 1 out of memory. With
 * LENS_FILTER_PART (m is one part of the job, e.g. one host's traces) a name
 * found nowhere selects nothing and nothing is said. */
#define LENS_FILTER_PART 0x1
int lens_filter_apply(const char *cmd, const struct lens_filter *f, struct lens_model *m, unsigned flags);
/* lens_filter_apply that also adds to t (may be NULL): events before and
 * after, and which --comm (comm_hit[k]) and --func (func_hit[k]) names this
 * model holds (arrays of f->n_comms and f->n_funcs, or NULL). With
 * LENS_FILTER_PART over a job's groups (tools/cli/passes.c) the tally says
 * afterwards what the whole job kept and which names nothing held. */
/* func_have (may be NULL, func_have_len bytes): with LENS_FILTER_PART, the
 * operations of a part where a --func names none, for the usage error of a
 * --func no part holds. */
struct lens_filter_tally {
  uint8_t *comm_hit, *func_hit;
  uint64_t kept, total;
  char *func_have; size_t func_have_len;
};
int lens_filter_apply_ex(const char *cmd, const struct lens_filter *f, struct lens_model *m, unsigned flags,
                         struct lens_filter_tally *t);
void lens_filter_free(struct lens_filter *f);
/* "0xID (name), ..." of m's communicators, for a --comm that names none of them. */
const char *lens_filter_list_comms(const struct lens_model *m, char *buf, size_t cap);
/* Appends to the list in buf ("A, B") the names of list that it lacks. */
void lens_filter_list_add(char *buf, size_t cap, const char *list);

/* Parses "0-3,8,10-11" into a bitmap of n entries (malloc'd). NULL on a bad list. */
uint8_t *lens_parse_rank_list(const char *s, size_t *n);
/* "1.5s", "200ms", "30us", "1200ns" (a bare number is seconds) to ns; -1 if invalid. */
int lens_parse_duration_ns(const char *s, uint64_t *ns);
/* --top N for a command's per-operation tables: 1 consumed, 0 not --top, -1 after a usage error. */
int lens_top_option(const char *cmd, int *i, int argc, char **argv, long *top);

#endif
