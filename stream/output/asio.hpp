// Boost.Asio for the feedback servers. Boost 1.74's asio/awaitable.hpp uses std::exchange without including
// <utility>, which GCC 12 in C++20 mode does not pull in otherwise: include it first (and only here).
#pragma once

// clang-format off
#include <utility>
#include <boost/asio.hpp>
// clang-format on
