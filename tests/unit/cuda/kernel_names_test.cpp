// SPDX-License-Identifier: Apache-2.0
#include "cuda/kernel_names.h"

#include <gtest/gtest.h>

#include <string>

namespace neutracer {
namespace {

// Mangled names below were produced by compiling equivalent declarations with g++ 12 and
// reading `nm`; the demangled forms were checked with `c++filt`.
constexpr const char *kVectorAdd = "_Z16vectorAdd_kernelPKfS0_Pfi";
constexpr const char *kVectorized =
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_"
    "T1_";
constexpr const char *kElementwiseLambda =
    "_ZN2at6native18elementwise_kernelILi128ELi4EZNS0_15gpu_kernel_implINS0_11FillFunctorIfEEEEvT_"
    "EUliE_EEviT1_";
constexpr const char *kAnonymous = "_ZN12_GLOBAL__N_111anon_kernelEPfi";

TEST(Demangle, DemanglesItaniumNames) {
  EXPECT_EQ(demangle(kVectorAdd), "vectorAdd_kernel(float const*, float const*, float*, int)");
  EXPECT_EQ(demangle(kVectorized),
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
            "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, "
            "1ul>)");
}

TEST(Demangle, LeavesNonMangledNamesUnchanged) {
  EXPECT_EQ(demangle("triton_poi_fused_add_0"), "triton_poi_fused_add_0");
  // Bare type encodings must not be demangled: a kernel called `f` is not `float`.
  EXPECT_EQ(demangle("f"), "f");
  EXPECT_EQ(demangle(""), "");
  EXPECT_EQ(demangle("_Znotvalid!!"), "_Znotvalid!!");
}

TEST(ShortKernelName, SimpleFunction) {
  EXPECT_EQ(short_kernel_name(kVectorAdd), "vectorAdd_kernel");
}

TEST(ShortKernelName, StripsTemplatesNamespacesAndReturnType) {
  EXPECT_EQ(short_kernel_name(kVectorized), "vectorized_elementwise_kernel");
}

TEST(ShortKernelName, LambdaTemplateArgument) {
  ASSERT_NE(demangle(kElementwiseLambda).find("{lambda(int)#1}"), std::string::npos);
  EXPECT_EQ(short_kernel_name(kElementwiseLambda), "elementwise_kernel");
}

TEST(ShortKernelName, AnonymousNamespace) {
  ASSERT_EQ(demangle(kAnonymous), "(anonymous namespace)::anon_kernel(float*, int)");
  EXPECT_EQ(short_kernel_name(kAnonymous), "anon_kernel");
}

TEST(ShortKernelName, AlreadyDemangledText) {
  EXPECT_EQ(short_kernel_name("void ns::Outer<int>::inner_kernel<float>(float*, int) const"),
            "inner_kernel");
  EXPECT_EQ(short_kernel_name("unsigned long ns::f(int) [clone .cold]"), "f");
}

TEST(ShortKernelName, PlainNamesUnchanged) {
  EXPECT_EQ(short_kernel_name("triton_poi_fused_add_0"), "triton_poi_fused_add_0");
  EXPECT_EQ(short_kernel_name("my_kernel"), "my_kernel");
  EXPECT_EQ(short_kernel_name(""), "");
}

TEST(ShortKernelName, TruncatedMangledNameDoesNotCrash) {
  const std::string truncated = std::string(kVectorized).substr(0, 20);
  const std::string result = short_kernel_name(truncated);
  EXPECT_FALSE(result.empty());
  EXPECT_EQ(result, truncated);
  // Every prefix of a real symbol must be handled without crashing or returning empty.
  const std::string full = kElementwiseLambda;
  for (std::size_t n = 1; n <= full.size(); ++n) {
    EXPECT_FALSE(short_kernel_name(full.substr(0, n)).empty()) << n;
  }
}

TEST(ShortKernelName, Operators) {
  EXPECT_EQ(short_kernel_name("_ZN2OpclEi"), "operator()");    // Op::operator()(int)
  EXPECT_EQ(short_kernel_name("_ZNK2OpltERKS_"), "operator<"); // Op::operator<(Op const&) const
  EXPECT_EQ(short_kernel_name("bool operator< <int>(int, int)"), "operator<");
  EXPECT_EQ(short_kernel_name("ns::Functor::operator bool() const"), "operator bool");
  EXPECT_EQ(short_kernel_name("void ns::f<(3>2)>(int)"), "f");
}

TEST(ShortKernelName, UnbalancedGarbageDoesNotCrash) {
  for (const char *text : {"<<<", ">>>", "(((", ")))", "a::", "::", "operator", "{lambda(",
                           "void (*f(int))(int)", " ", "a b c"}) {
    EXPECT_FALSE(short_kernel_name(text).empty()) << text;
  }
}

} // namespace
} // namespace neutracer
