#pragma once
#include "io/tree/prepare.hpp"
