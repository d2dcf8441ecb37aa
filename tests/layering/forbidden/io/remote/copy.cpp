#include "../transfer/bytes.hpp"
