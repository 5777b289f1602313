// Compiled only so that its target builds a precompiled header that other targets reuse
// (glass_pch_host in CMakeLists.txt).
