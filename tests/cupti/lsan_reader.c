/* Read by LeakSanitizer only (ASan builds), in the tests that load traces and
 * run the GPU analysis in their own process (it dlopens libcupti to walk
 * activity records): the same defaults as the nccl-lens command
 * (tools/cli/main.c says why). At exit this GCC's LeakSanitizer now and then
 * crashed walking the dynamic TLS that libcupti's load brings ("Tracer caught
 * signal 11" after every test of test_overrun_scale had passed; test_fold's
 * too, every time, once the window's loads changed: a DTLS entry read as
 * 0x17f2-0x28000028f4). Linked by tests/passes as well. */
const char *__lsan_default_options(void);
const char *__lsan_default_options(void) { return "use_tls=0:print_suppressions=0"; }
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libcupti.so\n"; }
