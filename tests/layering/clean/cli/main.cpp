#include "io/publish/outputs.hpp"
#include "specs/spec.hpp"
