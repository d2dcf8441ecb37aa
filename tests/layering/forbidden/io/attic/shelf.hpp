#pragma once
#include "io/remote/copy.hpp"
