#pragma once
// The number type of the whole library.
//
// GlassLLM is compiled twice from the same sources: with Scalar = float (the library and the
// `glass` program) and with Scalar = double (targets ending in _f64, defined GLASS_DOUBLE=1)
// so that gradient checks can compare against finite differences with tight tolerances.
// Each precision lives in its own inline namespace (glass::f32 / glass::f64), so both can be
// linked into one program without clashing; code simply writes glass::Tensor.

#if defined(GLASS_DOUBLE)
#define GLASS_PRECISION f64
#else
#define GLASS_PRECISION f32
#endif

namespace glass {
inline namespace GLASS_PRECISION {
#if defined(GLASS_DOUBLE)
using Scalar = double;
#else
using Scalar = float;
#endif
}  // namespace GLASS_PRECISION
}  // namespace glass
