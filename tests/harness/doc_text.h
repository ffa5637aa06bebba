#pragma once
// The repository's documents as the tests read them: a test that compares a
// rule, a number or a layout a document states with what the code does reads
// it from the document (FAIRLOCK_SOURCE_DIR, set by tests/CMakeLists.txt),
// never from a copy, so the two cannot drift apart unnoticed.
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace fairlock::test {

// The text of a file of the source tree, e.g. "docs/PROTOCOL.md".
inline std::string source_file(const std::string& relative) {
  const std::string path = std::string(FAIRLOCK_SOURCE_DIR) + "/" + relative;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The first `code` span (between backticks) after the first occurrence of
// `marker` in `text`.
inline std::string code_after(const std::string& text, const std::string& marker) {
  const auto at = text.find(marker);
  if (at == std::string::npos) throw std::runtime_error("the document has no \"" + marker + "\"");
  const auto open = text.find('`', at + marker.size());
  const auto close = open == std::string::npos ? open : text.find('`', open + 1);
  if (close == std::string::npos) throw std::runtime_error("no `code` after \"" + marker + "\"");
  return text.substr(open + 1, close - open - 1);
}

// The words of a text, split at spaces and newlines.
inline std::vector<std::string> words_of(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The ACL rule of a document's "ACL SETUSER app on >secret ..." line: the
// words after the password.
inline std::vector<std::string> documented_acl_rule(const std::string& text) {
  const std::string head = "ACL SETUSER app on >secret ";
  const auto at = text.find(head);
  if (at == std::string::npos) throw std::runtime_error("the document has no \"" + head + "\" line");
  const auto end = text.find('\n', at);
  return words_of(text.substr(at + head.size(), end - at - head.size()));
}

}  // namespace fairlock::test
