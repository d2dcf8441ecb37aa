#pragma once
#include "io/run/run.hpp"
