#pragma once
#include "specs/spec.hpp"
