#pragma once
// Amounts as a person reads them in messages and the progress line.
#include <string>

namespace mb {

// "1.2 GiB", "640 KiB", "17 B": binary units, three significant digits.
std::string byte_text(double bytes);

// How long `remaining` units take at `rate` units a second: "3s", "4m05s",
// "2h10m", or "--" without a rate. Rounded up, so that work not yet done
// never shows "0s".
std::string time_left_text(double remaining, double rate);

}  // namespace mb
