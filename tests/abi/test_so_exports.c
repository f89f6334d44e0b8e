/* The shape of build/lib/libnccl-profiler-lens.so as NCCL sees it: exactly
 * the three ABI tables and the control call are exported (everything else
 * hidden), and its thread-local storage stays tiny. The core's per-thread
 * pointer is initial-exec TLS for speed, which makes the .so a STATIC_TLS
 * module: glibc can dlopen it only while its TLS fits in the small static
 * surplus, so growing TLS would make dlopen fail in NCCL. */
#include <elf.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static const uint8_t *g_img;
static size_t g_len;

static int setup(void **state) {
  int fd = open(LENS_BUILD_DIR "/lib/libnccl-profiler-lens.so", O_RDONLY);
  if (fd < 0) return -1;
  struct stat st;
  fstat(fd, &st);
  g_len = (size_t)st.st_size;
  g_img = mmap(NULL, g_len, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  return g_img == MAP_FAILED ? -1 : 0;
}

static void test_exports_exactly_the_abi(void **state) {
  const Elf64_Ehdr *eh = (const void *)g_img;
  assert_memory_equal(eh->e_ident, ELFMAG, SELFMAG);
  const Elf64_Shdr *sh = (const void *)(g_img + eh->e_shoff);
  const char *want[] = {"ncclProfiler_v4", "ncclProfiler_v5", "ncclProfiler_v6", "ncclProfiler_v7",
                        "ncclLensSetEventMask"};
  enum { NWANT = sizeof want / sizeof want[0] };
  int seen[NWANT] = {0}, others = 0;
  for (int i = 0; i < eh->e_shnum; i++) {
    if (sh[i].sh_type != SHT_DYNSYM) continue;
    const Elf64_Sym *sym = (const void *)(g_img + sh[i].sh_offset);
    const char *str = (const char *)(g_img + sh[sh[i].sh_link].sh_offset);
    size_t n = sh[i].sh_size / sizeof *sym;
    for (size_t k = 0; k < n; k++) {
      if (sym[k].st_shndx == SHN_UNDEF || ELF64_ST_BIND(sym[k].st_info) == STB_LOCAL) continue;
      const char *name = str + sym[k].st_name;
      int hit = 0;
      for (int w = 0; w < NWANT; w++)
        if (!strcmp(name, want[w])) seen[w] = hit = 1;
      if (!hit) {
        print_message("unexpected export: %s\n", name);
        others++;
      }
    }
  }
  for (int w = 0; w < NWANT; w++) assert_true(seen[w]);
  assert_int_equal(others, 0);
}

static void test_tls_is_tiny(void **state) {
  const Elf64_Ehdr *eh = (const void *)g_img;
  const Elf64_Phdr *ph = (const void *)(g_img + eh->e_phoff);
  uint64_t tls = 0;
  for (int i = 0; i < eh->e_phnum; i++)
    if (ph[i].p_type == PT_TLS) tls = ph[i].p_memsz;
  assert_true(tls <= 64);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exports_exactly_the_abi),
      cmocka_unit_test(test_tls_is_tiny),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
