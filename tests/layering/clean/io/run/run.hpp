#pragma once
#include "core/base.hpp"
#include "specs/spec.hpp"
