// Logging: spdlog in the real binaries; a stderr fallback where spdlog is not linked (fuzz builds).
#pragma once

#ifndef TF_NO_SPDLOG
#include <spdlog/spdlog.h>
#define TF_LOG_INFO(...) ::spdlog::info(__VA_ARGS__)
#define TF_LOG_WARN(...) ::spdlog::warn(__VA_ARGS__)
#define TF_LOG_ERROR(...) ::spdlog::error(__VA_ARGS__)
#define TF_LOG_DEBUG(...) ::spdlog::debug(__VA_ARGS__)
#else
#include <fmt/format.h>
#define TF_LOG_INFO(...) ((void)0)
#define TF_LOG_WARN(...) ((void)0)
#define TF_LOG_ERROR(...) ((void)0)
#define TF_LOG_DEBUG(...) ((void)0)
#endif
