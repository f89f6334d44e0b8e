# Install layout and the Debian package (README "Install").
#   bin/nccl-lens                       the command line
#   lib/libnccl-profiler-lens.so        the plugin (plain lib/, also under
#                                       /usr: the CLI finds it as ../lib/
#                                       beside itself, and it is on the
#                                       loader's path for NCCL_PROFILER_PLUGIN=lens)
#   include/nccl-lens/*.h               public headers
#   lib/pkgconfig/nccl-lens.pc          pkg-config (Cflags, variable plugin)
#   share/man/man1/nccl-lens.1.gz       the manual page (every command), gzipped
#   share/doc/nccl-lens/                README, docs/, LICENSE (Apache-2.0), copyright
#   share/bash-completion/completions/nccl-lens, share/zsh/vendor-completions/_nccl-lens
#                                       shell completion (completion/, from the --help texts)
#   share/nccl-lens/                    Grafana dashboard, Prometheus rules
# `cmake --install build --prefix P`, or `cpack -G DEB` in build/.
include(GNUInstallDirs)
# cpack and `make install` install what is built, without first walking every
# target (the tests): build first (scripts/setup.sh or cmake --build).
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)
set(LENS_INSTALL_LIBDIR lib)

install(TARGETS nccl-lens RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS nccl-profiler-lens LIBRARY DESTINATION ${LENS_INSTALL_LIBDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/nccl-lens DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")
configure_file(${CMAKE_SOURCE_DIR}/cmake/nccl-lens.pc.in ${CMAKE_BINARY_DIR}/nccl-lens.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/nccl-lens.pc DESTINATION ${LENS_INSTALL_LIBDIR}/pkgconfig)
# The man page gzipped (-n: no name or time in it, the same bytes every time), made when installing
# so that an install after a partial build has it too.
set(LENS_MAN_GZ ${CMAKE_BINARY_DIR}/nccl-lens.1.gz)
install(CODE "execute_process(COMMAND gzip -9 -n -c \"${CMAKE_SOURCE_DIR}/docs/man/nccl-lens.1\"
  OUTPUT_FILE \"${LENS_MAN_GZ}\" RESULT_VARIABLE lens_gz)
if(NOT lens_gz EQUAL 0)
  message(FATAL_ERROR \"gzip of the man page failed: \${lens_gz}\")
endif()")
install(FILES ${LENS_MAN_GZ} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})
# Debian's copyright file (machine-readable format): /usr/share/doc/nccl-lens/copyright in the .deb.
install(FILES ${CMAKE_SOURCE_DIR}/cmake/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${CMAKE_SOURCE_DIR}/completion/nccl-lens.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
  RENAME nccl-lens)
install(FILES ${CMAKE_SOURCE_DIR}/completion/_nccl-lens DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs PATTERN "man" EXCLUDE)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/deploy/ DESTINATION ${CMAKE_INSTALL_DATADIR}/nccl-lens)

# cpack -G DEB (in build/): nccl-lens_<version>_<arch>.deb. Dependencies:
# dpkg-shlibdeps when it is there (dpkg-dev), else bookworm's package names.
set(CPACK_PACKAGE_NAME nccl-lens)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "nccl-lens")
set(CPACK_PACKAGE_CONTACT "nccl-lens developers <nccl-lens@users.noreply.github.com>")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CPACK_PACKAGE_CONTACT}")
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "NCCL profiler plugin and trace tools (nccl-lens)")
set(CPACK_PACKAGE_DESCRIPTION
  "An NCCL profiler plugin (libnccl-profiler-lens.so) that records every event NCCL reports into a crash-safe trace at a few tens of nanoseconds per event, draws NVTX ranges for Nsight Systems, and the nccl-lens command: summary, report, export to Perfetto, validate GPU times, hang and straggler diagnosis, network view, a node agent for Prometheus, an eBPF probe of proxy-thread scheduling.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
find_program(LENS_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(LENS_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.34), libzstd1, libbpf1, libelf1, libmicrohttpd12, libcurl4, libyajl2")
endif()
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "nsight-systems, prometheus")
include(CPack)
