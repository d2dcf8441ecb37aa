#include <doctest/doctest.h>

#include <map>
#include <string>

#include "core/launcher.hpp"

namespace {

// The variables of one process, as the launchers set them (measured here:
// OpenMPI 4.1 mpirun, Slurm 22.05 sbatch/srun; docs/design.md).
std::optional<mb::Launch> launch(std::map<std::string, std::string> vars) {
  return mb::detect_launch([&vars](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

}  // namespace

TEST_CASE("launcher: mpirun's ranks") {
  const auto l = launch({{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_RANK", "3"}, {"PMIX_RANK", "3"}});
  REQUIRE(l);
  CHECK(l->launcher == "mpirun");
  CHECK(l->tasks == 4);
  CHECK(l->rank == 3);
}

TEST_CASE("launcher: an srun step's tasks, with or without --mpi=pmix") {
  const auto l = launch({{"SLURM_STEP_ID", "0"}, {"SLURM_STEP_NUM_TASKS", "2"}, {"SLURM_PROCID", "1"},
                         {"SLURM_NTASKS", "2"}, {"PMIX_RANK", "1"}});
  REQUIRE(l);
  CHECK(l->launcher == "srun");
  CHECK(l->tasks == 2);
  CHECK(l->rank == 1);
  const auto one = launch({{"SLURM_STEP_ID", "0"}, {"SLURM_STEP_NUM_TASKS", "1"}, {"SLURM_PROCID", "0"}});
  REQUIRE(one);
  CHECK(one->tasks == 1);
}

TEST_CASE("launcher: a batch script or an array task is one process, whatever SLURM_NTASKS says") {
  CHECK_FALSE(launch({{"SLURM_NTASKS", "2"}, {"SLURM_PROCID", "0"}, {"SLURM_JOB_ID", "7"}}));
  CHECK_FALSE(launch({{"SLURM_ARRAY_TASK_ID", "2"}, {"SLURM_ARRAY_TASK_COUNT", "4"}, {"SLURM_PROCID", "0"}}));
  CHECK_FALSE(launch({}));
}

TEST_CASE("launcher: PMI launchers (MPICH's hydra, srun --mpi=pmi2)") {
  const auto l = launch({{"PMI_SIZE", "3"}, {"PMI_RANK", "0"}});
  REQUIRE(l);
  CHECK(l->launcher == "PMI");
  CHECK(l->tasks == 3);
}

TEST_CASE("launcher: malformed or inconsistent values are no launch") {
  CHECK_FALSE(launch({{"OMPI_COMM_WORLD_SIZE", "two"}, {"OMPI_COMM_WORLD_RANK", "0"}}));
  CHECK_FALSE(launch({{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "2"}}));
  CHECK_FALSE(launch({{"OMPI_COMM_WORLD_SIZE", "0"}, {"OMPI_COMM_WORLD_RANK", "0"}}));
  CHECK_FALSE(launch({{"OMPI_COMM_WORLD_SIZE", "2"}}));
  CHECK_FALSE(launch({{"SLURM_STEP_ID", "0"}, {"SLURM_STEP_NUM_TASKS", "-1"}, {"SLURM_PROCID", "0"}}));
}
