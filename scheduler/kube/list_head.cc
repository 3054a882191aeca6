// ListContinueToken: a list reply's continue token from its head (see list_head.h).
#include "scheduler/kube/list_head.h"

#include "nlohmann/json.hpp"

namespace tessel::kube {
namespace {

using nlohmann::json;

// Reads a list reply only as far as its top-level "metadata" object and keeps its "continue".
// Stops (returns false to the parser) as soon as that object ends, or at "items" if it comes
// first: then the token is not known from the head of the reply.
class ListHeadReader final : public nlohmann::json_sax<json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t& value) override {
    if (depth_ == 2 && in_metadata_ && key_ == "continue") continue_token_ = value;
    return true;
  }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    ++depth_;
    if (depth_ == 2 && key_ == "metadata") in_metadata_ = true;
    return true;
  }
  bool end_object() override {
    --depth_;
    if (depth_ == 1 && in_metadata_) {
      done_ = true;
      return false;
    }
    return true;
  }
  bool start_array(std::size_t) override {
    ++depth_;
    return !(depth_ == 2 && key_ == "items");  // items before metadata: give up
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool key(string_t& value) override {
    key_ = value;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }
  // The continue token ("" on the last page), or nullopt when the head did not say.
  std::optional<std::string> continue_token() const {
    if (!done_) return std::nullopt;
    return continue_token_;
  }

 private:
  int depth_ = 0;
  std::string key_;
  bool in_metadata_ = false;
  bool done_ = false;
  std::string continue_token_;
};

}  // namespace

std::optional<std::string> ListContinueToken(std::string_view body) {
  ListHeadReader reader;
  (void)json::sax_parse(body, &reader);
  return reader.continue_token();
}

}  // namespace tessel::kube
