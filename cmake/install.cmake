# Install rules and the Debian package, where Debian puts things:
#   /usr/bin/microbatch
#   /usr/share/man/man1/microbatch.1.gz
#   /usr/share/bash-completion/completions/microbatch
#   /usr/share/zsh/vendor-completions/_microbatch
#   /usr/share/fish/vendor_completions.d/microbatch.fish
#   /usr/share/doc/microbatch/README.md, CHANGELOG.md, docs/*.md (the manual)
#   /usr/share/doc/microbatch/schema/*.schema.json (the --json outputs' JSON Schemas)
# `scripts/package.sh` builds build/microbatch_VERSION_ARCH.deb (CPack; its
# Depends line comes from dpkg-shlibdeps, not from a hand-written list).
include(GNUInstallDirs)

# Debian ships man pages gzipped, without a time stamp (-n) so that the
# package is the same on every build.
set(MB_MANPAGE ${CMAKE_CURRENT_BINARY_DIR}/microbatch.1.gz)
add_custom_command(OUTPUT ${MB_MANPAGE}
  COMMAND gzip -9n -c ${CMAKE_CURRENT_SOURCE_DIR}/docs/microbatch.1 > ${MB_MANPAGE}
  DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/docs/microbatch.1
  COMMENT "gzip the man page")
add_custom_target(manpage ALL DEPENDS ${MB_MANPAGE})

install(TARGETS microbatch RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${MB_MANPAGE} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES completions/microbatch.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME microbatch)
install(FILES completions/_microbatch DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
install(FILES completions/microbatch.fish DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d)
install(FILES README.md CHANGELOG.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES docs/guide.md docs/behavior.md docs/cluster.md docs/remote.md docs/performance.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
install(FILES docs/schema/inspect.schema.json docs/schema/split-summary.schema.json
              docs/schema/merge-summary.schema.json docs/schema/error.schema.json DESTINATION ${CMAKE_INSTALL_DOCDIR}/schema)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME microbatch)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "cut HDF5 batches into microbatches and glue them back")
set(CPACK_PACKAGE_DESCRIPTION
    "microbatch splits a batch stored as HDF5 into one file per microbatch, as pipeline-parallel trainers do in memory, and merges them back exactly, checking what must be equal.")
set(CPACK_PACKAGE_CONTACT "microbatch developers <microbatch@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_STRIP_FILES ON)  # the build keeps debug info; the package does not
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "hdf5-tools")
include(CPack)
