/* `nccl-lens demo` end to end: replay through the real plugin, then export
 * and summary. Checks the files it promises, that they parse, that the
 * timeline holds exactly the KernelCh the replay says it started, for as many
 * processes as it ran, that its summaries are the summary command's, and
 * that the late-rank job it replays beside is named by the job view and by
 * its report page's verdict. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli_run.h"

static const char *CHECK_PY =
    "import json,sys,collections\n"
    "d=sys.argv[1]\n"
    "t=json.load(open(d+'/trace.json'))\n"
    "truth=json.load(open(d+'/truth.json'))\n"
    "s=json.load(open(d+'/summary.json'))\n"
    "c=collections.Counter(e['ph']+'/'+e.get('cat','') for e in t['traceEvents'])\n"
    "kch=sum(1 for p in truth['processes'] for k in p['kernel_ch'] if k.get('started'))\n"
    "procs=len([e for e in t['traceEvents'] if e.get('name')=='process_name'])\n"
    "ops=sum(o['count'] for cm in s['communicators'] for o in cm['ops'])\n"
    "print('kernel_ch', c['X/KernelCh'], kch)\n"
    "print('procs', procs, len(truth['processes']))\n"
    "print('ops', c['b/op'], ops)\n"
    "print('steps', c['b/ProxyStep'] > 0, 'comms', len(s['communicators']) > 0)\n";

static void test_demo(void **state) {
  (void)state;
  char dir[160];
  snprintf(dir, sizeof dir, "%s/demo", cli_tmpdir());
  struct cli_result r;
  const char *args[] = {"demo", "--out", dir, NULL};
  time_t t0 = time(NULL);
  assert_int_equal(cli_run(&r, args), 0);
  if (r.status) fprintf(stderr, "demo failed: %s\n", r.err);
  assert_int_equal(r.status, 0);
  assert_true(time(NULL) - t0 < 60);
  assert_non_null(strstr(r.out, "ui.perfetto.dev"));
  assert_non_null(strstr(r.out, "summary.txt"));
  assert_non_null(strstr(r.out, "late/job.txt"));
  char rep[1024];
  assert_int_equal(cli_python(CHECK_PY, dir, rep, sizeof rep), 0);
  int a, b;
  assert_int_equal(sscanf(strstr(rep, "kernel_ch"), "kernel_ch %d %d", &a, &b), 2);
  assert_true(a > 0);
  assert_int_equal(a, b);
  assert_int_equal(sscanf(strstr(rep, "procs"), "procs %d %d", &a, &b), 2);
  assert_int_equal(a, 2);
  assert_int_equal(a, b);
  assert_int_equal(sscanf(strstr(rep, "ops"), "ops %d %d", &a, &b), 2);
  assert_true(a > 0);
  assert_int_equal(a, b); /* one in-flight slice per Coll/P2p counted by the summary */
  assert_non_null(strstr(rep, "steps True comms True"));
  /* One answer: the demo's summaries are `nccl-lens summary`'s of its
   * traces, byte for byte (they once came from a one-model path of their
   * own, without the job view that leads the command's). */
  char traces[200], again[220];
  snprintf(traces, sizeof traces, "%s/traces", dir);
  for (int json = 0; json < 2; json++) {
    snprintf(again, sizeof again, "%s/again.%s", dir, json ? "json" : "txt");
    const char *sargs[] = {"summary", "-o", again, json ? "--json" : traces, json ? traces : NULL, NULL};
    assert_int_equal(cli_run(&r, sargs), 0);
    assert_int_equal(r.status, 0);
  }
  assert_int_equal(cli_python("import sys\nd=sys.argv[1]\n"
                              "same=[open(d+'/summary.'+x).read()==open(d+'/again.'+x).read() for x in ('txt','json')]\n"
                              "print('same', same, 'job' , 'the job (nccl-lens job' in open(d+'/summary.txt').read())\n",
                              dir, rep, sizeof rep),
                   0);
  assert_string_equal(rep, "same [True, True] job True\n");
  /* The late rank: the job view's top straggler is the rank the replay made
   * late (20 ms: named on any load, test_job_replay), its instances all matched */
  assert_int_equal(cli_python("import json,sys\nd=sys.argv[1]+'/late'\n"
                              "t=json.load(open(d+'/truth.json'))\n"
                              "lines=open(d+'/job.txt').read().split('\\n')\n"
                              "i=[k for k,l in enumerate(lines) if l.startswith('stragglers (')][0]\n"
                              "top=int(lines[i+2].split()[1])\n"
                              "inj=set(x['straggler'] for x in t['instances'])\n"
                              "h=open(d+'/report.html').read()\n"
                              "print('top', top, 'injected', sorted(inj), 'matched', "
                              "'6 instances: 6 matched on all ranks' in lines[0], 'page', "
                              "'\"key\":\"stragglers\",\"status\":\"bad\"' in h and '\"text\":\"Stragglers: rank 1 of' in h)\n",
                              dir, rep, sizeof rep),
                   0);
  assert_string_equal(rep, "top 1 injected [1] matched True page True\n");
  /* a second run replaces the first run's traces instead of mixing them in */
  assert_int_equal(cli_run(&r, args), 0);
  assert_int_equal(r.status, 0);
  assert_int_equal(cli_python("import glob,sys\nprint(len(glob.glob(sys.argv[1]+'/traces/*.lens')))\n", dir, rep,
                              sizeof rep),
                   0);
  assert_int_equal(atoi(rep), 2);
  assert_int_equal(cli_python("import glob,sys\nprint(len(glob.glob(sys.argv[1]+'/late/traces/*.lens')))\n", dir,
                              rep, sizeof rep),
                   0);
  assert_int_equal(atoi(rep), 2);
  /* DIR must be ours alone: the commands write into it by name (a symbolic
   * link another user planted in a shared DIR would be followed) */
  char shared[200];
  snprintf(shared, sizeof shared, "%s/shared", cli_tmpdir());
  assert_int_equal(mkdir(shared, 0700), 0);
  assert_int_equal(chmod(shared, 0777), 0);
  const char *sargs2[] = {"demo", "--out", shared, NULL};
  assert_int_equal(cli_run(&r, sargs2), 0);
  assert_int_equal(r.status, 1);
  assert_non_null(strstr(r.err, "writable by others"));
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_demo)};
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  cli_cleanup();
  return rc;
}
