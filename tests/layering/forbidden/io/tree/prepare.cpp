#include "io/run/run.hpp"

#include "io/publish/outputs.hpp"
