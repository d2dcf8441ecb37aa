#include "io/attic/shelf.hpp"
