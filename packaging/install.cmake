# `cmake --install` and `cpack -G DEB`: the binary, its man page (from --help), the rules it
# embeds, the burn-in profiles and deployment files, the docs and the licenses.
include(GNUInstallDirs)
set(CMAKE_INSTALL_DOCDIR ${CMAKE_INSTALL_DATAROOTDIR}/doc/ccscope)

add_custom_command(
  OUTPUT ${CMAKE_BINARY_DIR}/ccscope.1
  COMMAND ${CMAKE_COMMAND} -DBIN=$<TARGET_FILE:ccscope> -DOUT=${CMAKE_BINARY_DIR}/ccscope.1
          -DVERSION=${PROJECT_VERSION} -P ${PROJECT_SOURCE_DIR}/packaging/manpage.cmake
  DEPENDS ccscope ${PROJECT_SOURCE_DIR}/packaging/manpage.cmake
  COMMENT "ccscope.1 from --help")
add_custom_target(ccscope_manpage ALL DEPENDS ${CMAKE_BINARY_DIR}/ccscope.1)

install(TARGETS ccscope RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${CMAKE_BINARY_DIR}/ccscope.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
file(GLOB CCSCOPE_INSTALL_RULES ${PROJECT_SOURCE_DIR}/diagnostics/rules/*.toml)
install(FILES ${CCSCOPE_INSTALL_RULES} DESTINATION ${CMAKE_INSTALL_DATADIR}/ccscope/rules)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/deploy/profiles/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/ccscope/profiles)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/deploy/slurm ${PROJECT_SOURCE_DIR}/deploy/k8s
                  ${PROJECT_SOURCE_DIR}/deploy/hang
        DESTINATION ${CMAKE_INSTALL_DATADIR}/ccscope/deploy)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/LICENSE
              ${PROJECT_SOURCE_DIR}/packaging/copyright
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(CPACK_PACKAGE_NAME ccscope)
set(CPACK_PACKAGE_VENDOR "The ccscope authors")
set(CPACK_PACKAGE_CONTACT "The ccscope authors <ccscope@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "collective-communication benchmark and diagnostics (NCCL, MPI, UCX, RDMA, TCP, shm)")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_STRIP_FILES ON)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
# Dependencies are read from the binary's shared libraries (dpkg-shlibdeps). A build with CUDA
# links NCCL and the CUDA runtime from NVIDIA's repository, which dpkg cannot attribute: such a
# build names them itself (NVIDIA's package names) and lists the Debian ones it links.
if(CCSCOPE_HAVE_CUDA_BUILD)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
  set(CCSCOPE_DEB_CUDA_MAJOR 13 CACHE STRING "CUDA major version the package depends on")
  set(CPACK_DEBIAN_PACKAGE_DEPENDS
      "libc6, libstdc++6, libgcc-s1, libfmt9, libspdlog1.10-fmt9, libtomlplusplus3, zlib1g, libopenmpi3, libucx0, libibverbs1, libnccl2, cuda-cudart-${CCSCOPE_DEB_CUDA_MAJOR}-0")
else()
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
endif()
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "openmpi-bin, iproute2, pciutils")
include(CPack)
