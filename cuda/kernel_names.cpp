// SPDX-License-Identifier: Apache-2.0
#include "cuda/kernel_names.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <vector>

namespace neutracer {
namespace {

struct free_deleter {
  void operator()(char *p) const { std::free(p); }
};

bool is_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

bool is_operator_symbol_char(char c) {
  return std::string_view("+-*/%^&|~!=<>,[]").find(c) != std::string_view::npos;
}

// Length of an `operator...` token starting at `i` (keyword plus its symbol or conversion type),
// or 0 if there is none. Needed because the symbols `<`, `>`, `(`, `)` would otherwise be taken
// for brackets and wreck the depth tracking.
std::size_t operator_token_length(std::string_view text, std::size_t i) {
  constexpr std::string_view keyword = "operator";
  if (text.substr(i, keyword.size()) != keyword) {
    return 0;
  }
  if (i > 0 && is_ident_char(text[i - 1])) {
    return 0;
  }
  std::size_t j = i + keyword.size();
  if (j < text.size() && is_ident_char(text[j])) {
    return 0; // An identifier such as `operator_add`, not the keyword.
  }
  if (text.substr(j, 2) == "()") {
    return j + 2 - i;
  }
  if (j < text.size() && text[j] == ' ') {
    // Conversion / new / delete: `operator bool`, `operator new[]`, `operator std::vector<int>`.
    ++j;
    int angle = 0;
    while (j < text.size()) {
      const char c = text[j];
      if (c == '<') {
        ++angle;
      } else if (c == '>') {
        if (angle == 0) {
          break;
        }
        --angle;
      } else if (angle == 0 && (c == '(' || c == ',' || c == ')')) {
        break;
      }
      ++j;
    }
    return j - i;
  }
  // Symbolic operators are at most three characters (`<<=`, `->*`, `<=>`).
  std::size_t n = 0;
  while (n < 3 && j + n < text.size() && is_operator_symbol_char(text[j + n])) {
    ++n;
  }
  return j + n - i;
}

// Scans the demangled text tracking bracket nesting; only depth-0 text forms the name.
// `candidate` is the name component that preceded the most recent depth-0 argument list;
// a following `::` means that list belonged to an enclosing function scope, not the symbol.
std::string shorten_demangled(std::string_view text) {
  std::string current;
  std::string candidate;
  std::vector<char> stack; // Open brackets: '<' or '('.
  std::size_t i = 0;
  while (i < text.size()) {
    if (const std::size_t op = operator_token_length(text, i); op != 0) {
      if (stack.empty()) {
        current.append(text.substr(i, op));
      }
      i += op;
      continue;
    }
    const char c = text[i];
    if (c == '<' || c == '(') {
      if (stack.empty() && c == '(' && !current.empty()) {
        candidate = current;
      }
      stack.push_back(c);
      ++i;
      continue;
    }
    if (c == '>') {
      // Only closes a template bracket; a '>' inside parentheses is `->` or a comparison.
      if (!stack.empty() && stack.back() == '<') {
        stack.pop_back();
      }
      ++i;
      continue;
    }
    if (c == ')') {
      // Pop through the matching '(' so a stray '<' (a less-than) cannot leave us stuck deep.
      while (!stack.empty()) {
        const char top = stack.back();
        stack.pop_back();
        if (top == '(') {
          break;
        }
      }
      ++i;
      continue;
    }
    if (!stack.empty()) {
      ++i;
      continue;
    }
    // Depth 0 from here on.
    if (c == '{') {
      // `{lambda(int)#1}` / `{unnamed type#1}`: keep the whole unit as a name component.
      std::size_t j = i;
      int braces = 0;
      do {
        if (text[j] == '{') {
          ++braces;
        } else if (text[j] == '}') {
          --braces;
        }
        ++j;
      } while (j < text.size() && braces > 0);
      current.append(text.substr(i, j - i));
      i = j;
      continue;
    }
    if (text.substr(i, 2) == "::") {
      current.clear();
      candidate.clear();
      i += 2;
      continue;
    }
    if (c == ' ') {
      if (i + 1 < text.size() && text[i + 1] == '<') {
        ++i; // `operator< <int>`: the space separates template arguments, not a return type.
        continue;
      }
      if (!candidate.empty()) {
        break; // After the argument list: cv/ref qualifiers or ` [clone .cold]`.
      }
      current.clear(); // Everything so far was the return type.
      ++i;
      continue;
    }
    current.push_back(c);
    ++i;
  }
  return candidate.empty() ? current : candidate;
}

} // namespace

std::string demangle(std::string_view mangled) {
  // Only `_Z` symbols: __cxa_demangle also accepts bare type encodings, so a plain kernel named
  // `f` would otherwise come back as `float`.
  if (mangled.substr(0, 2) != "_Z") {
    return std::string(mangled);
  }
  const std::string input(mangled); // __cxa_demangle needs NUL termination.
  int status = 0;
  const std::unique_ptr<char, free_deleter> out(
      abi::__cxa_demangle(input.c_str(), nullptr, nullptr, &status));
  if (status != 0 || out == nullptr) {
    return input;
  }
  return std::string(out.get());
}

std::string short_kernel_name(std::string_view mangled_or_plain) {
  const std::string full = demangle(mangled_or_plain);
  std::string short_name = shorten_demangled(full);
  // Never hand back an empty label for a non-empty symbol (e.g. function-pointer return types).
  if (short_name.empty()) {
    return full;
  }
  return short_name;
}

} // namespace neutracer
