// SPDX-License-Identifier: Apache-2.0
#include "http/basic_auth.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "held_password_check.h"
#include "http/base64.h"
#include "http/basic_authenticator.h"
#include "http/bcrypt.h"
#include "http/credential_cache.h"
#include "http/sha256.h"

namespace neutracer {
namespace {

using namespace std::string_literals;

// "correct horse" with salt "abcdefghijklmnopqrstuu" at cost 5, written by libxcrypt.
const std::string kHash2y = "$2y$05$abcdefghijklmnopqrstuuHNbAKRhpaujgo33bRWs.NLUTJO3lOy2";
const std::string kHash2b = "$2b$05$abcdefghijklmnopqrstuuHNbAKRhpaujgo33bRWs.NLUTJO3lOy2";
const std::string kHash2a = "$2a$05$abcdefghijklmnopqrstuuHNbAKRhpaujgo33bRWs.NLUTJO3lOy2";

// ---- base64 ---------------------------------------------------------------------------------

TEST(Base64, DecodesPaddedText) {
  EXPECT_EQ(decode_base64(""), "");
  EXPECT_EQ(decode_base64("Zg=="), "f");
  EXPECT_EQ(decode_base64("Zm8="), "fo");
  EXPECT_EQ(decode_base64("Zm9v"), "foo");
  EXPECT_EQ(decode_base64("Zm9vYmFy"), "foobar");
  EXPECT_EQ(decode_base64("dXNlcjpwYXNz"), "user:pass");
  EXPECT_EQ(decode_base64("+/+/"), "\xfb\xff\xbf");
  EXPECT_EQ(decode_base64("AA=="), "\0"s);
}

TEST(Base64, RefusesAnythingElse) {
  for (const std::string text : {"Zg", "Zg=", "Zm9", "Z===", "====", "Zg==Zg==", "Zm=v", "Zm9v\n",
                                 "Zm9v Zm9v", "Zm-v", "Zm_v", "Zh==", "Zm9=", "\xff\xff\xff\xff"})
    EXPECT_EQ(decode_base64(text), std::nullopt) << text;
}

// ---- Authorization header --------------------------------------------------------------------

TEST(BasicAuthorization, ParsesUserAndPassword) {
  EXPECT_EQ(parse_basic_authorization("Basic dXNlcjpwYXNz"), (BasicCredentials{"user", "pass"}));
  // The scheme is case-insensitive; blanks around the value and after the scheme are allowed.
  EXPECT_EQ(parse_basic_authorization("  bAsIc \t dXNlcjpwYXNz  "),
            (BasicCredentials{"user", "pass"}));
  // The password may contain ':' and may be empty; the user ends at the first ':'.
  EXPECT_EQ(parse_basic_authorization("Basic dTphOmI="), (BasicCredentials{"u", "a:b"}));
  EXPECT_EQ(parse_basic_authorization("Basic dTo="), (BasicCredentials{"u", ""}));
  EXPECT_EQ(parse_basic_authorization("Basic OnB3"), (BasicCredentials{"", "pw"}));
  // UTF-8 passes through unchanged ("jö:pä").
  EXPECT_EQ(parse_basic_authorization("Basic asO2OnDDpA=="),
            (BasicCredentials{"j\xc3\xb6", "p\xc3\xa4"}));
}

TEST(BasicAuthorization, RefusesMalformedHeaders) {
  for (const std::string value :
       {"", "Basic", "Basic ", "Basicdxnlcjpw", "Bearer dXNlcjpwYXNz", "Digest username=x",
        "Basic dXNlcnBhc3M=" /* "userpass": no ':' */, "Basic dXNlcjpwYXNz=", "Basic !!!!",
        "Basic dXNlcjpwYXNz dXNlcjpwYXNz", "Basic\ndXNlcjpwYXNz"})
    EXPECT_EQ(parse_basic_authorization(value), std::nullopt) << value;
}

TEST(BasicAuthorization, RefusesControlCharactersInCredentials) {
  // "user:pa\0ss": crypt() would stop at the NUL and check "pa".
  EXPECT_EQ(parse_basic_authorization("Basic dXNlcjpwYQBzcw=="), std::nullopt);
  // "us\ner:pass" and "user:pass\x7f".
  EXPECT_EQ(parse_basic_authorization("Basic dXMKZXI6cGFzcw=="), std::nullopt);
  EXPECT_EQ(parse_basic_authorization("Basic dXNlcjpwYXNzfw=="), std::nullopt);
}

// ---- configured hashes and users -------------------------------------------------------------

TEST(BcryptHashProblem, AcceptsBcryptVariants) {
  EXPECT_EQ(bcrypt_hash_problem(kHash2y), std::nullopt);
  EXPECT_EQ(bcrypt_hash_problem(kHash2b), std::nullopt);
  EXPECT_EQ(bcrypt_hash_problem(kHash2a), std::nullopt);
  EXPECT_EQ(bcrypt_hash_problem("$2y$31$" + kHash2y.substr(7)), std::nullopt);
}

TEST(BcryptHashProblem, NamesOtherHashTypesWithoutRepeatingThem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"$1$saltsalt$qjXMvbEw8oaL.CzflDugX/", "MD5-crypt"},
      {"$apr1$saltsalt$kDEEHZNQGPSTGC1dxZ91n0", "Apache MD5"},
      {"$5$saltsalt$1MFVJXMnBYKQuQ27.vjxkbmzh4iaoZVY6YJBQvClqAA", "SHA-256-crypt"},
      {"$6$saltsalt$4ZwHrYOEVRpWmFyV/yv7Z.rsJuDW8c9M9eWKXBuz4kAhW2l7hnNWgwmh2Iq8x",
       "SHA-512-crypt"},
      {"$y$j9T$saltsaltsaltsalt$abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLM", "yescrypt"},
      {"{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=", "SHA-1"},
      {"$2x$05$" + kHash2y.substr(7), "$2x$"},
      {"my-plaintext-password", "not a bcrypt hash"},
  };
  for (const auto &[hash, expected] : cases) {
    const auto problem = bcrypt_hash_problem(hash);
    ASSERT_TRUE(problem.has_value()) << hash;
    EXPECT_NE(problem->find(expected), std::string::npos) << *problem;
    EXPECT_NE(problem->find("htpasswd"), std::string::npos) << *problem;
    EXPECT_EQ(problem->find(hash), std::string::npos) << "the value leaked: " << *problem;
  }
}

TEST(BcryptHashProblem, RefusesMalformedBcrypt) {
  const std::string tail = kHash2y.substr(7);
  for (const std::string &hash : std::vector<std::string>{
           "$2y$05$" + tail.substr(1), "$2y$05$" + tail + "x", "$2y$5$" + tail + "x",
           "$2y$ab$" + tail, "$2y$05x" + tail, "$2y$03$" + tail, "$2y$32$" + tail,
           "$2y$05$" + tail.substr(1) + "!", "$2y$05$" + tail.substr(1) + ":", "$2y$", ""})
    EXPECT_TRUE(bcrypt_hash_problem(hash).has_value()) << hash;
  EXPECT_NE(bcrypt_hash_problem("$2y$03$" + tail)->find("cost 3"), std::string::npos);
}

TEST(BasicAuthUserProblem, ChecksNames) {
  EXPECT_EQ(basic_auth_user_problem("prometheus"), std::nullopt);
  EXPECT_EQ(basic_auth_user_problem("j\xc3\xb6rg"), std::nullopt);
  EXPECT_TRUE(basic_auth_user_problem("").has_value());
  EXPECT_TRUE(basic_auth_user_problem("a:b").has_value());
  EXPECT_TRUE(basic_auth_user_problem("a\tb").has_value());
}

// ---- bcrypt through libxcrypt ----------------------------------------------------------------

TEST(Bcrypt, VerifiesAKnownHashInEachVariant) {
  for (const std::string &hash : {kHash2y, kHash2b, kHash2a}) {
    EXPECT_TRUE(bcrypt_matches("correct horse", hash)) << hash;
    EXPECT_FALSE(bcrypt_matches("correct horsf", hash)) << hash;
    EXPECT_FALSE(bcrypt_matches("", hash)) << hash;
  }
}

TEST(Bcrypt, HashesWithAFreshSaltAndVerifies) {
  const std::string first = bcrypt_hash("s3cret", 4);
  const std::string second = bcrypt_hash("s3cret", 4);
  EXPECT_EQ(bcrypt_hash_problem(first), std::nullopt) << first;
  EXPECT_TRUE(first.starts_with("$2b$04$")) << first;
  EXPECT_NE(first, second); // a new salt each time
  EXPECT_TRUE(bcrypt_matches("s3cret", first));
  EXPECT_TRUE(bcrypt_matches("s3cret", second));
  EXPECT_FALSE(bcrypt_matches("s3cret!", first));
}

TEST(Bcrypt, RefusesUnusableInput) {
  EXPECT_FALSE(bcrypt_matches("correct horse", "not a hash"));
  EXPECT_FALSE(bcrypt_matches("correct horse", ""));
  EXPECT_FALSE(bcrypt_matches("correct horse\0junk"s, kHash2y));
  // A salt alone hashes fine but never equals the full hash.
  EXPECT_FALSE(bcrypt_matches("correct horse", kHash2y.substr(0, 29)));
  EXPECT_THROW(bcrypt_hash("x", 3), std::runtime_error);
}

// What libxcrypt (Python's crypt module) wrote for 72 'a's and "-the-first-password" at cost 4:
// hashes of long passwords exist in the wild (htpasswd makes them without a warning).
const std::string kLongPasswordHash =
    "$2b$04$IOce/dXHZ3/16DLqnC8u2OY4twN8zskOvMnAJDUIDhGByp.uIvo16";

TEST(Bcrypt, PasswordsLongerThan72BytesNeverMatch) {
  const std::string prefix(72, 'a');
  // bcrypt itself ignores everything after byte 72, so both of these would verify.
  EXPECT_FALSE(bcrypt_matches(prefix + "-the-first-password", kLongPasswordHash));
  EXPECT_FALSE(bcrypt_matches(prefix + "-another-password", kLongPasswordHash));
  EXPECT_THROW(bcrypt_hash(prefix + "b", 4), std::runtime_error);
  // 72 bytes exactly is still a whole password.
  const std::string longest = bcrypt_hash(std::string(71, 'a') + "b", 4);
  EXPECT_TRUE(bcrypt_matches(std::string(71, 'a') + "b", longest));
  EXPECT_FALSE(bcrypt_matches(std::string(71, 'a') + "c", longest));
}

// ---- cache of verified headers ---------------------------------------------------------------

TEST(CredentialCache, EvictsTheLeastRecentlyUsed) {
  CredentialCache cache(2);
  const auto a = sha256("a"), b = sha256("b"), c = sha256("c");
  EXPECT_FALSE(cache.contains(a));
  cache.insert(a);
  cache.insert(b);
  EXPECT_TRUE(cache.contains(a)); // a is now the most recently used
  cache.insert(c);                // evicts b
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_TRUE(cache.contains(a));
  EXPECT_FALSE(cache.contains(b));
  EXPECT_TRUE(cache.contains(c));
  cache.insert(c); // no duplicate
  EXPECT_EQ(cache.size(), 2u);
}

TEST(CredentialCache, CapacityIsAtLeastOne) {
  CredentialCache cache(0);
  cache.insert(sha256("a"));
  EXPECT_TRUE(cache.contains(sha256("a")));
  cache.insert(sha256("b"));
  EXPECT_FALSE(cache.contains(sha256("a")));
  EXPECT_EQ(cache.size(), 1u);
}

TEST(Sha256, KnownDigest) {
  const auto digest = sha256("abc");
  EXPECT_EQ(digest[0], 0xba);
  EXPECT_EQ(digest[1], 0x78);
  EXPECT_EQ(digest[31], 0xad);
  EXPECT_NE(sha256("abc"), sha256("abd"));
}

// ---- the authenticator -----------------------------------------------------------------------

// The real bcrypt check, counting calls and recording the hash each call used.
struct CountingCheck {
  std::atomic<int> calls = 0;
  std::string last_hash;
  BasicAuthenticator::PasswordCheck function() {
    return [this](const std::string &password, const std::string &hash) {
      ++calls;
      last_hash = hash;
      return bcrypt_matches(password, hash);
    };
  }
};

std::string header_for(const std::string &user_colon_password) {
  static const char *kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out = "Basic ";
  const std::string &in = user_colon_password;
  for (std::size_t i = 0; i < in.size(); i += 3) {
    const std::size_t left = in.size() - i;
    std::uint32_t bits = static_cast<unsigned char>(in[i]) << 16;
    if (left > 1)
      bits |= static_cast<unsigned char>(in[i + 1]) << 8;
    if (left > 2)
      bits |= static_cast<unsigned char>(in[i + 2]);
    out += kAlphabet[bits >> 18 & 63];
    out += kAlphabet[bits >> 12 & 63];
    out += left > 1 ? kAlphabet[bits >> 6 & 63] : '=';
    out += left > 2 ? kAlphabet[bits & 63] : '=';
  }
  return out;
}

TEST(BasicAuthenticator, TestHeaderEncoderMatchesTheDecoder) {
  EXPECT_EQ(header_for("user:pass"), "Basic dXNlcjpwYXNz");
  EXPECT_EQ(parse_basic_authorization(header_for("a:b:c")), (BasicCredentials{"a", "b:c"}));
}

TEST(BasicAuthenticator, AcceptsTheRightPasswordAndCachesIt) {
  CountingCheck check;
  BasicAuthenticator authenticator({{"prometheus", kHash2y}}, check.function());
  const std::string good = header_for("prometheus:correct horse");
  EXPECT_TRUE(authenticator.authorized(good));
  EXPECT_EQ(check.calls, 1);
  EXPECT_TRUE(authenticator.authorized(good));
  EXPECT_TRUE(authenticator.authorized(good));
  EXPECT_EQ(check.calls, 1) << "a verified header must not pay bcrypt again";
}

TEST(BasicAuthenticator, RefusesWrongPasswordsEveryTime) {
  CountingCheck check;
  BasicAuthenticator authenticator({{"prometheus", kHash2y}}, check.function());
  const std::string wrong = header_for("prometheus:correct horsf");
  EXPECT_FALSE(authenticator.authorized(wrong));
  EXPECT_FALSE(authenticator.authorized(wrong));
  EXPECT_EQ(check.calls, 2) << "failures are not cached";
  EXPECT_EQ(check.last_hash, kHash2y);
}

TEST(BasicAuthenticator, UnknownUserCostsABcryptAtTheHighestConfiguredCost) {
  CountingCheck check;
  const std::string slow = bcrypt_hash("other", 6);
  BasicAuthenticator authenticator({{"prometheus", kHash2y}, {"grafana", slow}}, check.function());
  EXPECT_FALSE(authenticator.authorized(header_for("nobody:correct horse")));
  EXPECT_EQ(check.calls, 1) << "an unknown user must cost as much as a wrong password";
  // The decoy is the cost-6 hash's salt: a setting that never equals a full hash.
  EXPECT_EQ(check.last_hash, slow.substr(0, 29));
  EXPECT_FALSE(authenticator.authorized(header_for("nobody:other")));
}

TEST(BasicAuthenticator, MissingOrMalformedHeadersCostNoBcrypt) {
  CountingCheck check;
  BasicAuthenticator authenticator({{"prometheus", kHash2y}}, check.function());
  EXPECT_FALSE(authenticator.authorized(std::nullopt));
  EXPECT_FALSE(authenticator.authorized(""));
  EXPECT_FALSE(authenticator.authorized("Bearer abc"));
  EXPECT_FALSE(authenticator.authorized("Basic %%%%"));
  EXPECT_EQ(check.calls, 0);
}

TEST(BasicAuthenticator, EachUserChecksAgainstTheirOwnHash) {
  const std::string grafana = bcrypt_hash("dashboards", 4);
  BasicAuthenticator authenticator({{"prometheus", kHash2y}, {"grafana", grafana}});
  EXPECT_TRUE(authenticator.authorized(header_for("grafana:dashboards")));
  EXPECT_TRUE(authenticator.authorized(header_for("prometheus:correct horse")));
  EXPECT_FALSE(authenticator.authorized(header_for("grafana:correct horse")));
  EXPECT_FALSE(authenticator.authorized(header_for("prometheus:dashboards")));
  EXPECT_FALSE(authenticator.authorized(header_for("Prometheus:correct horse")));
}

TEST(BasicAuthenticator, APasswordEqualInItsFirst72BytesIsRefused) {
  BasicAuthenticator authenticator({{"prometheus", kLongPasswordHash}});
  const std::string prefix(72, 'a');
  EXPECT_FALSE(authenticator.authorized(header_for("prometheus:" + prefix + "-another-password")));
  EXPECT_FALSE(
      authenticator.authorized(header_for("prometheus:" + prefix + "-the-first-password")));
}

TEST(BasicAuthenticator, RefusesBadConfiguration) {
  using Users = std::map<std::string, std::string>;
  EXPECT_THROW(BasicAuthenticator(Users{}), std::invalid_argument);
  EXPECT_THROW(BasicAuthenticator(Users{{"u", "$6$salt$hash"}}), std::invalid_argument);
  EXPECT_THROW(BasicAuthenticator(Users{{"a:b", kHash2y}}), std::invalid_argument);
}

TEST(BasicAuthenticator, ConcurrentChecksAgree) {
  CountingCheck check;
  BasicAuthenticator authenticator({{"prometheus", kHash2y}}, check.function());
  const std::string good = header_for("prometheus:correct horse");
  const std::string bad = header_for("prometheus:wrong");
  std::atomic<int> accepted = 0, refused = 0;
  std::vector<std::jthread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      for (int round = 0; round < 3; ++round) {
        // Busy is "not now", never a verdict: ask again until there is one.
        AuthDecision decision = AuthDecision::busy;
        while (decision == AuthDecision::busy)
          decision = authenticator.decide(i % 2 ? good : bad);
        (decision == AuthDecision::allowed ? accepted : refused)++;
      }
    });
  threads.clear();
  EXPECT_EQ(accepted, 12);
  EXPECT_EQ(refused, 12);
  EXPECT_GE(check.calls, 12 + 1);
}

// One bcrypt slot and no room to wait: what a full queue does.
PasswordCheckLimits no_waiting() {
  PasswordCheckLimits limits;
  limits.turns = {.slots = 1, .max_waiting = 0, .max_waiting_per_source = 0};
  return limits;
}

TEST(BasicAuthenticator, UncachedChecksFindingTheQueueFullAreBusyAtOnceAndCachedOnesPass) {
  HeldPasswordCheck check;
  BasicAuthenticator authenticator({{"prometheus", kHash2y}}, check.function(), 16, no_waiting());
  const std::string good = header_for("prometheus:correct horse");
  EXPECT_TRUE(authenticator.authorized(good)); // verified and cached before the flood

  check.set_held(true);
  std::jthread guesser([&] {
    EXPECT_EQ(authenticator.decide(header_for("prometheus:guess-1")), AuthDecision::refused);
  });
  ASSERT_TRUE(check.wait_inside(2)) << "the guess never reached bcrypt";
  // The slot is taken: another guess is busy without waiting; the cached header passes.
  EXPECT_EQ(authenticator.decide(header_for("prometheus:guess-2")), AuthDecision::busy);
  EXPECT_EQ(authenticator.decide(header_for("grafana:guess")), AuthDecision::busy);
  EXPECT_EQ(authenticator.decide(good), AuthDecision::allowed);
  // Absent, malformed and over-72-byte passwords are refused without a slot.
  EXPECT_EQ(authenticator.decide(std::nullopt), AuthDecision::refused);
  EXPECT_EQ(authenticator.decide("Basic !!"), AuthDecision::refused);
  EXPECT_EQ(authenticator.decide(header_for("prometheus:" + std::string(73, 'x'))),
            AuthDecision::refused);
  check.set_held(false);
  guesser.join();
  EXPECT_EQ(check.inside, 2) << "busy and refused-early checks ran no bcrypt";
  EXPECT_EQ(authenticator.decide(header_for("prometheus:guess-2")), AuthDecision::refused)
      << "the slot was given back";
}

TEST(BasicAuthenticator, AnUncachedValidHeaderWaitsForTheSlotAGuessHoldsAndIsCached) {
  HeldPasswordCheck check;
  BasicAuthenticator authenticator({{"prometheus", kHash2y}}, check.function());
  check.set_held(true);
  std::jthread guesser([&] {
    EXPECT_EQ(authenticator.decide(header_for("prometheus:guess"), "10.0.0.66"),
              AuthDecision::refused);
  });
  ASSERT_TRUE(check.wait_inside(1)) << "the guess never reached bcrypt";
  const std::string good = header_for("prometheus:correct horse");
  AuthDecision decision = AuthDecision::busy;
  std::jthread scraper([&] { decision = authenticator.decide(good, "10.0.0.7"); });
  // The scraper queues behind the guess (a 10 s bound so that a broken queue fails, not hangs).
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (authenticator.turns().waiting() != 1 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::yield();
  const std::size_t queued = authenticator.turns().waiting();
  check.set_held(false);
  EXPECT_EQ(queued, 1u);
  scraper.join();
  EXPECT_EQ(decision, AuthDecision::allowed) << "it waited for its turn instead of a 429";
  EXPECT_EQ(check.inside, 2);
  EXPECT_EQ(authenticator.decide(good, "10.0.0.7"), AuthDecision::allowed);
  EXPECT_EQ(check.inside, 2) << "then served from the cache";
}

TEST(BasicAuthenticator, AWaitThatOutlivesItsDeadlineIsBusy) {
  HeldPasswordCheck check;
  PasswordCheckLimits limits;
  limits.max_wait = std::chrono::milliseconds(0); // a deadline already passed when it queues
  BasicAuthenticator authenticator({{"prometheus", kHash2y}}, check.function(), 16, limits);
  check.set_held(true);
  std::jthread guesser([&] { authenticator.decide(header_for("prometheus:guess")); });
  ASSERT_TRUE(check.wait_inside(1));
  EXPECT_EQ(authenticator.decide(header_for("prometheus:correct horse")), AuthDecision::busy);
  EXPECT_EQ(authenticator.turns().waiting(), 0u) << "it left the queue";
  check.set_held(false);
}

} // namespace
} // namespace neutracer
