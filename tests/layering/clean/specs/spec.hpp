#pragma once
#include "core/base.hpp"
