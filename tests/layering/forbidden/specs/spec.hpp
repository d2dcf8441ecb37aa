#pragma once
#include "core/base.hpp"
#include "io/run/run.hpp"
