#include "io/tree/reader.hpp"
#include "../tree/reader.hpp"
