// The production guard: the one decision every writer to workloads (apply, rollback, and any
// later one) takes immediately before each write, from what the API says at that moment.
//
// A namespace is production when
//   - one of its labels whose key is in `label_keys` (built in: environment, env, tier) has a
//     value in `label_values` (built in: production, prod, prd), keys and values compared
//     without case;
//   - such a label's value is not a string (fail closed: an unreadable label is production);
//   - its name holds one of `name_words` (built in: prod, production, prd) as a word: the name
//     split at '-', '.' and '_', a part equal to the word, without case, or the word followed
//     by digits only (prod, prd-pay, production-eu, eu-prod2; not prodigy or nonprod);
//   - or its name matches one of `name_patterns` ('*' globs).
// Configuration adds keys, values, words and patterns to the built-in ones; it can never remove
// them. An empty selector in a policy file is a configuration error, never "nothing is
// production".
//
// A workload opts out with an annotation (default gpuvpa.io/opt-out) on itself or on its pod
// template: any value but a recognised false (false, no, off, 0, empty; without case) opts out.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"

namespace gpuvpa::updater {

using Labels = std::map<std::string, std::string, std::less<>>;

// Stands for a label value the API sent as another JSON type than a string (the real API never
// does; a proxy or a hostile double might). It can never be a real label value (those are at
// most 63 characters of [A-Za-z0-9._-]).
inline constexpr std::string_view kNonStringLabelValue = "\x01(a value that is not a string)";

struct ProductionSelector {
  std::vector<std::string> label_keys = {"environment", "env", "tier"};
  std::vector<std::string> label_values = {"production", "prod", "prd"};
  std::vector<std::string> name_words = {"production", "prod", "prd"};
  std::vector<std::string> name_patterns;

  // Every list non-empty and no entry empty.
  Status Validate() const;
  // Why `namespace_name` with `namespace_labels` is production, or "" when it is not.
  std::string Why(std::string_view namespace_name, const Labels& namespace_labels) const;
  bool Matches(std::string_view namespace_name, const Labels& namespace_labels) const {
    return !Why(namespace_name, namespace_labels).empty();
  }
};

// '*' globs only; no other metacharacter.
bool GlobMatches(std::string_view pattern, std::string_view text);

// A usable list entry of a selector: not empty, and not only '*' (which would match every
// namespace by accident of a typo).
bool IsUsableSelectorEntry(std::string_view entry);

// Whether an opt-out annotation's value opts out (anything but a recognised false).
bool OptOutValue(std::string_view value);

}  // namespace gpuvpa::updater
