#include "reader.hpp"
#include <io/run/run.hpp>
// #include "io/publish/outputs.hpp" (a comment, not an include)
