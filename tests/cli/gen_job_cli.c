/* See gen_job_cli.h. */
#include "gen_job_cli.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "../lens_test_file.h"
#include "../lens_test_tmp.h"

static char dir[256];

int gen_job_make(const char *name, int hosts) {
  lens_test_tmpdir(dir, sizeof dir, name);
  return lens_test_sh("%s/bin/lens-gen-job -o %s/job --ranks 1024 --hosts %d --events 300000 --compress none "
                      ">/dev/null 2>&1",
                      LENS_BUILD_DIR, dir, hosts);
}

char *gen_job_run(const char *cmd) {
  static int n;
  char out[512];
  snprintf(out, sizeof out, "%s/out%d.txt", dir, n++);
  assert_int_equal(lens_test_sh("%s/bin/nccl-lens %s %s/job > %s 2>/dev/null", LENS_BUILD_DIR, cmd, dir, out), 0);
  char *text = lens_test_slurp(out, NULL);
  assert_non_null(text);
  return text;
}
