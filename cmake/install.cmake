# Install rules and the two Debian packages, where Debian puts things.
# Package microbatch (CMake component "cli"):
#   /usr/bin/microbatch
#   /usr/share/man/man1/microbatch.1.gz
#   /usr/share/bash-completion/completions/microbatch
#   /usr/share/zsh/vendor-completions/_microbatch
#   /usr/share/fish/vendor_completions.d/microbatch.fish
#   /usr/share/doc/microbatch/copyright, LICENSE, README.md, CHANGELOG.md, and
#     docs/: the manual (*.md), the man pages' sources (microbatch.1, microbatch-mpi.1, which
#     the README links), schema/*.schema.json (the --json outputs' JSON Schemas)
#     examples/: slurm/ (job scripts, a one-node Slurm), s3/ (a local S3 server)
#   laid out as in the source tree, so that the pages' relative links hold.
# Package microbatch-mpi (component "mpi", where MPI was found):
#   /usr/bin/microbatch-mpi
#   /usr/share/man/man1/microbatch-mpi.1.gz
#   /usr/share/doc/microbatch-mpi/copyright, LICENSE
# `scripts/package.sh` builds build/microbatch_VERSION_ARCH.deb and
# build/microbatch-mpi_VERSION_ARCH.deb (CPack; their Depends come from
# dpkg-shlibdeps, not from a hand-written list), so that a machine without
# MPI installs microbatch without OpenMPI.
include(GNUInstallDirs)

# Man pages carry the version of project(); Debian ships them gzipped,
# without a time stamp (-n) so that the package is the same on every build.
function(mb_manpage name)
  set(gz ${CMAKE_CURRENT_BINARY_DIR}/${name}.1.gz)
  add_custom_command(OUTPUT ${gz}
    COMMAND gzip -9n -c ${CMAKE_CURRENT_BINARY_DIR}/${name}.1 > ${gz}
    DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/${name}.1
    COMMENT "gzip the man page ${name}(1)")
  add_custom_target(manpage-${name} ALL DEPENDS ${gz})
  set(MB_MANPAGE_${name} ${gz} PARENT_SCOPE)
endfunction()

# What both packages carry in /usr/share/doc/PACKAGE/.
function(mb_install_legal component package)
  install(FILES cmake/copyright LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${package} COMPONENT ${component})
endfunction()

foreach(name microbatch microbatch-mpi)  # both: the manual links both
  configure_file(${CMAKE_CURRENT_SOURCE_DIR}/docs/${name}.1 ${CMAKE_CURRENT_BINARY_DIR}/${name}.1 @ONLY)
endforeach()
mb_manpage(microbatch)
install(TARGETS microbatch RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT cli)
install(FILES ${MB_MANPAGE_microbatch} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT cli)
install(FILES completions/microbatch.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME microbatch COMPONENT cli)
install(FILES completions/_microbatch DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions COMPONENT cli)
install(FILES completions/microbatch.fish DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d
        COMPONENT cli)
mb_install_legal(cli microbatch)
set(MB_DOC ${CMAKE_INSTALL_DATADIR}/doc/microbatch)
install(FILES README.md CHANGELOG.md DESTINATION ${MB_DOC} COMPONENT cli)
install(FILES docs/guide.md docs/behavior.md docs/cluster.md docs/remote.md docs/performance.md docs/design.md
              docs/testing.md ${CMAKE_CURRENT_BINARY_DIR}/microbatch.1 ${CMAKE_CURRENT_BINARY_DIR}/microbatch-mpi.1
        DESTINATION ${MB_DOC}/docs COMPONENT cli)
install(FILES docs/schema/inspect.schema.json docs/schema/split-summary.schema.json
              docs/schema/merge-summary.schema.json docs/schema/error.schema.json
              docs/schema/verify-report.schema.json docs/schema/finish-summary.schema.json
              docs/schema/diff-report.schema.json
        DESTINATION ${MB_DOC}/docs/schema COMPONENT cli)
install(PROGRAMS examples/slurm/split.sbatch examples/slurm/finish.sbatch examples/slurm/merge.sbatch
                 examples/slurm/mpi.sbatch examples/slurm/train.sbatch examples/slurm/pipeline.sh
                 examples/slurm/local-slurm.sh
        DESTINATION ${MB_DOC}/examples/slurm COMPONENT cli)
# Not node_modules/: local-s3.sh installs s3rver on first use (npm ci, into the user's cache).
install(PROGRAMS examples/s3/local-s3.sh DESTINATION ${MB_DOC}/examples/s3 COMPONENT cli)
install(FILES examples/s3/server.js examples/s3/s3rver-fixes.js examples/s3/package.json examples/s3/package-lock.json
        DESTINATION ${MB_DOC}/examples/s3 COMPONENT cli)

if(MB_MPI)
  mb_manpage(microbatch-mpi)
  install(TARGETS microbatch-mpi RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT mpi)
  install(FILES ${MB_MANPAGE_microbatch-mpi} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT mpi)
  mb_install_legal(mpi microbatch-mpi)
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME microbatch)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "microbatch developers <microbatch@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL cli)
if(MB_MPI)
  list(APPEND CPACK_COMPONENTS_ALL mpi)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_STRIP_FILES ON)  # the build keeps debug info; the packages do not

set(CPACK_DEBIAN_CLI_PACKAGE_NAME microbatch)
set(CPACK_DEBIAN_CLI_DESCRIPTION "cut HDF5 batches into microbatches and glue them back
 microbatch splits a batch stored as HDF5 into one file per microbatch, as
 pipeline-parallel trainers do in memory, and merges them back exactly,
 checking what must be equal.")
set(CPACK_DEBIAN_CLI_PACKAGE_RECOMMENDS "hdf5-tools")

set(CPACK_DEBIAN_MPI_PACKAGE_NAME microbatch-mpi)
set(CPACK_DEBIAN_MPI_DESCRIPTION "microbatch split and merge as the ranks of mpirun or srun
 microbatch-mpi is microbatch built with OpenMPI: started by mpirun or srun as
 P tasks, its split writes one shard per rank and its merge shares out the
 compression among the ranks, with the same output bytes as one process.")
set(CPACK_DEBIAN_MPI_PACKAGE_RECOMMENDS "microbatch (= ${PROJECT_VERSION}), openmpi-bin")
include(CPack)
