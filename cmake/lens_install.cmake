# Install layout and the Debian package (README "Install").
#   bin/nccl-lens                       the command line
#   lib/libnccl-profiler-lens.so        the plugin (plain lib/, also under
#                                       /usr: the CLI finds it as ../lib/
#                                       beside itself, and it is on the
#                                       loader's path for NCCL_PROFILER_PLUGIN=lens)
#   include/nccl-lens/*.h               public headers
#   lib/pkgconfig/nccl-lens.pc          pkg-config (Cflags, variable plugin)
#   share/man/man1/nccl-lens.1          the manual page (every command)
#   share/doc/nccl-lens/                README and docs/
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
install(FILES ${CMAKE_SOURCE_DIR}/docs/man/nccl-lens.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${CMAKE_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs PATTERN "man" EXCLUDE)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/deploy/ DESTINATION ${CMAKE_INSTALL_DATADIR}/nccl-lens)

# cpack -G DEB (in build/): nccl-lens_<version>_<arch>.deb. Dependencies:
# dpkg-shlibdeps when it is there (dpkg-dev), else bookworm's package names.
set(CPACK_PACKAGE_NAME nccl-lens)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "nccl-lens")
set(CPACK_PACKAGE_CONTACT "nccl-lens maintainers <maintainers@users.noreply.a-seed-0c55de03.example>")
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
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.34), libzstd1, libbpf1, libelf1, libmicrohttpd12, libcurl4")
endif()
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "nsight-systems, prometheus")
include(CPack)
