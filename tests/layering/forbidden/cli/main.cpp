#include "io/store/store.hpp"
