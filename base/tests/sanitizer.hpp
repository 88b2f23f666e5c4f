#pragma once
// Whether this build runs under a sanitizer (gcc defines __SANITIZE_*__,
// clang answers __has_feature). Tests that take minutes there, or measure
// memory the sanitizer's own bookkeeping would swamp, ask this.

namespace scalescope {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

}  // namespace scalescope
