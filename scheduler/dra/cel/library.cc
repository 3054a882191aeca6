// The supported functions: declarations written as compact type signatures ("list(A),A->int"),
// and one run-time implementation per function name that dispatches on the values it gets, as
// cel-go's trait-based operators do (a call the values do not fit is "no such overload").
#include "scheduler/dra/cel/library.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <map>

#include "re2/re2.h"
#include "scheduler/util/strings.h"

namespace tessel::dra::cel {
namespace {

using K = Type::Kind;
using Args = std::span<const Value>;
using ListPtr = std::shared_ptr<const ValueList>;
using SemverPtr = std::shared_ptr<const SemanticVersion>;

// ---- Type signatures ------------------------------------------------------------------------

Type ParseTypeText(std::string_view& s) {
  auto take = [&](std::string_view word) {
    if (s.substr(0, word.size()) != word) return false;
    s.remove_prefix(word.size());
    return true;
  };
  if (take("list(")) {
    Type elem = ParseTypeText(s);
    take(")");
    return Type::List(std::move(elem));
  }
  if (take("map(")) {
    Type key = ParseTypeText(s);
    take(",");
    Type value = ParseTypeText(s);
    take(")");
    return Type::Map(std::move(key), std::move(value));
  }
  static constexpr std::pair<std::string_view, K> kNames[] = {
      {"int", K::kInt}, {"uint", K::kUint}, {"double", K::kDouble}, {"string", K::kString},
      {"bool", K::kBool}, {"dyn", K::kDyn}, {"null", K::kNull}, {"Quantity", K::kQuantity},
      {"Semver", K::kSemver}};
  for (const auto& [name, kind] : kNames) {
    if (take(name)) return Type::Of(kind);
  }
  Type p = Type::Of(K::kParam);
  p.param_name = s.empty() ? 'A' : s[0];
  s.remove_prefix(s.empty() ? 0 : 1);
  return p;
}

// "int,int->int"
Overload ParseOverload(std::string_view sig) {
  Overload o;
  size_t arrow = sig.find("->");
  std::string_view params = sig.substr(0, arrow), result = sig.substr(arrow + 2);
  while (!params.empty()) {
    o.params.push_back(ParseTypeText(params));
    if (!params.empty() && params[0] == ',') params.remove_prefix(1);
  }
  o.result = ParseTypeText(result);
  return o;
}

using Impl = std::function<Value(Args, const CallSite&)>;

struct Function {
  std::string_view name;
  bool member;
  std::vector<Overload> overloads;
  Impl impl;
};

// ---- Helpers --------------------------------------------------------------------------------

template <typename T>
const T* As(const Value& v) { return v.get<T>(); }

Value Bool(bool b) { return Value{b}; }
Value Int(int64_t i) { return Value{i}; }
Value Str(std::string s) { return Value{std::move(s)}; }
Value Overflow() { return Error("integer overflow"); }

int CompareDouble(double a, double b) { return a < b ? -1 : a > b ? 1 : 0; }
int CompareIntDouble(int64_t i, double d) {
  if (d < -9223372036854775808.0) return 1;
  if (d > 9223372036854775807.0) return -1;
  return CompareDouble(static_cast<double>(i), d);
}
int CompareUintDouble(uint64_t u, double d) {
  if (d < 0) return 1;
  if (d > 18446744073709551615.0) return -1;
  return CompareDouble(static_cast<double>(u), d);
}
int CompareIntUint(int64_t i, uint64_t u) {
  if (i < 0 || u > static_cast<uint64_t>(kInt64Max)) return -1;
  return i < static_cast<int64_t>(u) ? -1 : i > static_cast<int64_t>(u) ? 1 : 0;
}

// Numeric comparison across int, uint and double; nullopt when either is not a number.
std::optional<int> CompareNumbers(const Value& a, const Value& b) {
  if (auto x = As<int64_t>(a)) {
    if (auto y = As<int64_t>(b)) return *x < *y ? -1 : *x > *y ? 1 : 0;
    if (auto y = As<uint64_t>(b)) return CompareIntUint(*x, *y);
    if (auto y = As<double>(b)) return CompareIntDouble(*x, *y);
  } else if (auto x = As<uint64_t>(a)) {
    if (auto y = As<uint64_t>(b)) return *x < *y ? -1 : *x > *y ? 1 : 0;
    if (auto y = As<int64_t>(b)) return -CompareIntUint(*y, *x);
    if (auto y = As<double>(b)) return CompareUintDouble(*x, *y);
  } else if (auto x = As<double>(a)) {
    if (auto y = As<double>(b)) return CompareDouble(*x, *y);
    if (auto y = As<int64_t>(b)) return -CompareIntDouble(*y, *x);
    if (auto y = As<uint64_t>(b)) return -CompareUintDouble(*y, *x);
  }
  return std::nullopt;
}

bool IsNumber(const Value& v) {
  return As<int64_t>(v) || As<uint64_t>(v) || As<double>(v);
}
bool IsNaN(const Value& v) {
  const double* d = As<double>(v);
  return d && std::isnan(*d);
}

// traits.Comparer's Compare: -1, 0, 1, or 2 when the two cannot be ordered (an error upstream).
int CompareValues(const Value& a, const Value& b) {
  if (IsNaN(a) || IsNaN(b)) return 2;
  if (std::optional<int> c = CompareNumbers(a, b)) return *c;
  if (auto x = As<std::string>(a), y = As<std::string>(b); x && y) return x->compare(*y) < 0 ? -1 : *x == *y ? 0 : 1;
  if (auto x = As<bool>(a), y = As<bool>(b); x && y) return *x == *y ? 0 : *x ? 1 : -1;
  return 2;
}

Value Order(std::string_view op, Args a, std::function<bool(int)> want) {
  if (IsNaN(a[0]) || IsNaN(a[1])) {
    if (IsNumber(a[0]) && IsNumber(a[1])) return Error("NaN values cannot be ordered");
  }
  std::optional<int> c = CompareNumbers(a[0], a[1]);
  if (!c) {
    if (auto x = As<std::string>(a[0]), y = As<std::string>(a[1]); x && y) c = x->compare(*y) < 0 ? -1 : *x == *y ? 0 : 1;
    if (auto x = As<bool>(a[0]), y = As<bool>(a[1]); x && y) c = *x == *y ? 0 : *x ? 1 : -1;
  }
  if (!c) return NoSuchOverload(op);
  return Bool(want(*c));
}

// The list of a value: a shared list, or null.
const ValueList* ListOf(const Value& v) {
  const ListPtr* l = As<ListPtr>(v);
  return l ? l->get() : nullptr;
}

template <typename F>
void ForEachKey(const DeviceMap& m, F&& f) {
  if (m.map == nullptr) return;
  switch (m.kind) {
    case DeviceMap::Kind::kAttributeDomains:
      for (const auto& [k, unused] : *static_cast<const DomainMap<AttributeValue>*>(m.map)) f(k);
      break;
    case DeviceMap::Kind::kCapacityDomains:
      for (const auto& [k, unused] : *static_cast<const DomainMap<std::string>*>(m.map)) f(k);
      break;
    case DeviceMap::Kind::kAttributes:
      for (const auto& [k, unused] : *static_cast<const DomainMap<AttributeValue>::mapped_type*>(m.map)) f(k);
      break;
    case DeviceMap::Kind::kCapacities:
      for (const auto& [k, unused] : *static_cast<const DomainMap<std::string>::mapped_type*>(m.map)) f(k);
      break;
  }
}

int64_t MapSize(const DeviceMap& m) {
  int64_t n = 0;
  ForEachKey(m, [&](const std::string&) { ++n; });
  return n;
}

// Looks a key up; nullopt when absent (the caller decides between default and error).
std::optional<Value> MapFind(const DeviceMap& m, std::string_view key) {
  switch (m.kind) {
    case DeviceMap::Kind::kAttributeDomains: {
      auto* d = static_cast<const DomainMap<AttributeValue>*>(m.map);
      if (d == nullptr) return std::nullopt;
      auto it = d->find(key);
      if (it == d->end()) return std::nullopt;
      return Value{DeviceMap{DeviceMap::Kind::kAttributes, &it->second}};
    }
    case DeviceMap::Kind::kCapacityDomains: {
      auto* d = static_cast<const DomainMap<std::string>*>(m.map);
      if (d == nullptr) return std::nullopt;
      auto it = d->find(key);
      if (it == d->end()) return std::nullopt;
      return Value{DeviceMap{DeviceMap::Kind::kCapacities, &it->second}};
    }
    case DeviceMap::Kind::kAttributes: {
      auto* d = static_cast<const DomainMap<AttributeValue>::mapped_type*>(m.map);
      if (d == nullptr) return std::nullopt;
      auto it = d->find(key);
      if (it == d->end()) return std::nullopt;
      return AttributeToValue(it->second);
    }
    case DeviceMap::Kind::kCapacities: {
      auto* d = static_cast<const DomainMap<std::string>::mapped_type*>(m.map);
      if (d == nullptr) return std::nullopt;
      auto it = d->find(key);
      if (it == d->end()) return std::nullopt;
      std::optional<KubeQuantity> q = KubeQuantity::Parse(it->second);
      if (!q) return Error(StrCat("capacity ", key, ": \"", it->second, "\" is not a quantity"));
      return Value{*q};
    }
  }
  return std::nullopt;
}

bool IsDomainMap(const DeviceMap& m) {
  return m.kind == DeviceMap::Kind::kAttributeDomains || m.kind == DeviceMap::Kind::kCapacityDomains;
}

Value LookupKey(const DeviceMap& m, const Value& key) {
  const std::string* k = As<std::string>(key);
  std::optional<Value> found = k ? MapFind(m, *k) : std::nullopt;
  if (found) return *found;
  // The reference's device maps answer a missing domain with an empty map.
  if (m.kind == DeviceMap::Kind::kAttributeDomains) return Value{DeviceMap{DeviceMap::Kind::kAttributes, nullptr}};
  if (m.kind == DeviceMap::Kind::kCapacityDomains) return Value{DeviceMap{DeviceMap::Kind::kCapacities, nullptr}};
  return Error(StrCat("no such key: ", k ? *k : std::string(key.TypeName())));
}

// Go's strings.Replace(s, old, new, n) (n < 0: all).
std::string GoReplace(const std::string& s, const std::string& old, const std::string& repl, int64_t n) {
  if (old == repl || n == 0) return s;
  std::string out;
  size_t pos = 0;
  int64_t done = 0;
  if (old.empty()) {
    std::u32string runes = DecodeUtf8(s);
    std::string result;
    size_t i = 0;
    for (; i <= runes.size() && (n < 0 || done < n); ++i, ++done) {
      result += repl;
      if (i < runes.size()) result += EncodeUtf8(std::u32string(1, runes[i]));
    }
    if (i < runes.size() + 1) result += EncodeUtf8(std::u32string_view(runes).substr(std::min(i, runes.size())));
    return result;
  }
  while (n < 0 || done < n) {
    size_t at = s.find(old, pos);
    if (at == std::string::npos) break;
    out.append(s, pos, at - pos);
    out += repl;
    pos = at + old.size();
    ++done;
  }
  out.append(s, pos);
  return out;
}

// Go's strings.SplitN(s, sep, n) (n < 0: all; n == 0: none).
ValueList GoSplit(const std::string& s, const std::string& sep, int64_t n) {
  ValueList out;
  if (n == 0) return out;
  if (sep.empty()) {
    std::u32string runes = DecodeUtf8(s);
    size_t count = n < 0 || static_cast<size_t>(n) > runes.size() ? runes.size() : static_cast<size_t>(n);
    for (size_t i = 0; i < count; ++i) {
      if (i + 1 == count && count < runes.size()) {
        out.push_back(Str(EncodeUtf8(std::u32string_view(runes).substr(i))));
      } else {
        out.push_back(Str(EncodeUtf8(std::u32string(1, runes[i]))));
      }
    }
    return out;
  }
  size_t pos = 0;
  while (n < 0 || static_cast<int64_t>(out.size()) + 1 < n) {
    size_t at = s.find(sep, pos);
    if (at == std::string::npos) break;
    out.push_back(Str(s.substr(pos, at - pos)));
    pos = at + sep.size();
  }
  out.push_back(Str(s.substr(pos)));
  return out;
}

bool IsGoSpace(char32_t c) {
  switch (c) {
    case '\t': case '\n': case '\v': case '\f': case '\r': case ' ': case 0x85: case 0xA0:
    case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

std::string AsciiCase(const std::string& s, bool upper) {
  std::string out = s;
  for (char& c : out) {
    if (upper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
    if (!upper && c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  }
  return out;
}

Value IndexOf(const std::string& str, const std::string& sub, int64_t offset, bool last, bool has_offset) {
  std::u32string runes = DecodeUtf8(str), subr = DecodeUtf8(sub);
  int64_t n = static_cast<int64_t>(runes.size()), m = static_cast<int64_t>(subr.size());
  if (last && !has_offset) {
    if (sub.empty()) return Int(n);
    if (str.size() < sub.size()) return Int(-1);
    offset = n - 1;
  }
  if (offset < 0) return Error(StrCat("index out of range: ", offset));
  if (sub.empty()) return Int(offset > n ? n : offset);
  if (offset >= n) return Int(-1);
  auto match_at = [&](int64_t i) { return std::equal(subr.begin(), subr.end(), runes.begin() + i); };
  if (!last) {
    for (int64_t i = offset; i < n - (m - 1); ++i) {
      if (match_at(i)) return Int(i);
    }
    return Int(-1);
  }
  int64_t off = offset > n - m ? n - m : offset;
  for (int64_t i = off; i >= 0; --i) {
    if (match_at(i)) return Int(i);
  }
  return Int(-1);
}

// Go's underscoreOK: underscores only between digits, or after a base prefix.
bool GoUnderscoresOk(std::string_view s) {
  char saw = '^';  // '^' start, '0' digit or prefix, '_' underscore, '!' other
  size_t i = 0;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) s.remove_prefix(1);
  bool hex = s.size() >= 2 && s[0] == '0' && (s[1] | 0x20) == 'x';
  if (hex) {
    i = 2;
    saw = '0';
  }
  for (; i < s.size(); ++i) {
    char c = s[i];
    if ((c >= '0' && c <= '9') || (hex && ((c | 0x20) >= 'a' && (c | 0x20) <= 'f'))) {
      saw = '0';
    } else if (c == '_') {
      if (saw != '0') return false;
      saw = '_';
    } else {
      if (saw == '_') return false;
      saw = '!';
    }
  }
  return saw != '_';
}

// Go's strconv.ParseFloat(s, 64) for string -> double: decimal or hexadecimal ("0x1p-2", which
// needs its p exponent) mantissas, underscores between digits, inf/infinity/nan, a range error
// on overflow.
std::optional<double> ParseGoFloat(const std::string& s) {
  std::string body = AsciiCase(s, false);
  bool negative = false;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    negative = body[0] == '-';
    body.erase(0, 1);
  }
  if (body == "inf" || body == "infinity") return negative ? -HUGE_VAL : HUGE_VAL;
  if (body == "nan") return std::nan("");
  if (body.find('_') != std::string::npos) {
    if (!GoUnderscoresOk(body)) return std::nullopt;
    body.erase(std::remove(body.begin(), body.end(), '_'), body.end());
  }
  bool hex = body.size() > 2 && body[0] == '0' && body[1] == 'x';
  if (hex) {
    body.erase(0, 2);
    if (body.find('p') == std::string::npos) return std::nullopt;
  }
  std::string_view allowed = hex ? "0123456789abcdef.p+-" : "0123456789.e+-";
  if (body.empty() || body.find_first_not_of(allowed) != std::string::npos) return std::nullopt;
  double d = 0;
  auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), d,
                                   hex ? std::chars_format::hex : std::chars_format::general);
  if (end != body.data() + body.size()) return std::nullopt;
  if (ec == std::errc::result_out_of_range) {
    // Go reports a range error for overflow and rounds underflow to zero without one.
    double probe = std::strtod((hex ? "0x" + body : body).c_str(), nullptr);
    if (std::abs(probe) > 1) return std::nullopt;
    d = 0;
  }
  return negative ? -d : d;
}

std::optional<int64_t> ParseGoInt(const std::string& s) {
  if (s.empty()) return std::nullopt;
  size_t i = s[0] == '+' || s[0] == '-' ? 1 : 0;
  if (i == s.size() || s.find_first_not_of("0123456789", i) != std::string::npos) return std::nullopt;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data() + (s[0] == '+' ? 1 : 0), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<uint64_t> ParseGoUint(const std::string& s) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

Value QuantityResult(std::optional<KubeQuantity> q) {
  if (!q) return Error("quantity arithmetic over exponents more than 100000 apart (not supported by Tessel)");
  return Value{*q};
}

// ---- The function table ---------------------------------------------------------------------

std::vector<Function> BuildFunctions() {
  std::vector<Function> fns;
  auto def = [&](std::string_view name, bool member, std::initializer_list<std::string_view> sigs, Impl impl) {
    Function f{name, member, {}, std::move(impl)};
    for (std::string_view s : sigs) f.overloads.push_back(ParseOverload(s));
    fns.push_back(std::move(f));
  };
  auto simple = [](std::function<Value(Args)> f) -> Impl {
    return [f = std::move(f)](Args a, const CallSite&) { return f(a); };
  };

  def("!_", false, {"bool->bool"}, simple([](Args a) {
        const bool* b = As<bool>(a[0]);
        return b ? Bool(!*b) : NoSuchOverload("!_");
      }));
  def("-_", false, {"int->int", "double->double"}, simple([](Args a) {
        if (auto i = As<int64_t>(a[0])) return *i == kInt64Min ? Overflow() : Int(-*i);
        if (auto d = As<double>(a[0])) return Value{-*d};
        return NoSuchOverload("-_");
      }));

  def("_+_", false, {"int,int->int", "uint,uint->uint", "double,double->double", "string,string->string",
                     "list(A),list(A)->list(A)"},
      simple([](Args a) -> Value {
        if (auto x = As<int64_t>(a[0]), y = As<int64_t>(a[1]); x && y) {
          int64_t r;
          return __builtin_add_overflow(*x, *y, &r) ? Overflow() : Int(r);
        }
        if (auto x = As<uint64_t>(a[0]), y = As<uint64_t>(a[1]); x && y) {
          uint64_t r;
          return __builtin_add_overflow(*x, *y, &r) ? Error("unsigned integer overflow") : Value{r};
        }
        if (auto x = As<double>(a[0]), y = As<double>(a[1]); x && y) return Value{*x + *y};
        if (auto x = As<std::string>(a[0]), y = As<std::string>(a[1]); x && y) return Str(*x + *y);
        if (auto x = ListOf(a[0]), y = ListOf(a[1]); x && y) {
          auto out = std::make_shared<ValueList>(*x);
          out->insert(out->end(), y->begin(), y->end());
          return Value{ListPtr(std::move(out))};
        }
        return NoSuchOverload("_+_");
      }));
  def("_-_", false, {"int,int->int", "uint,uint->uint", "double,double->double"}, simple([](Args a) -> Value {
        if (auto x = As<int64_t>(a[0]), y = As<int64_t>(a[1]); x && y) {
          int64_t r;
          return __builtin_sub_overflow(*x, *y, &r) ? Overflow() : Int(r);
        }
        if (auto x = As<uint64_t>(a[0]), y = As<uint64_t>(a[1]); x && y) {
          return *y > *x ? Error("unsigned integer overflow") : Value{*x - *y};
        }
        if (auto x = As<double>(a[0]), y = As<double>(a[1]); x && y) return Value{*x - *y};
        return NoSuchOverload("_-_");
      }));
  def("_*_", false, {"int,int->int", "uint,uint->uint", "double,double->double"}, simple([](Args a) -> Value {
        if (auto x = As<int64_t>(a[0]), y = As<int64_t>(a[1]); x && y) {
          int64_t r;
          return __builtin_mul_overflow(*x, *y, &r) ? Overflow() : Int(r);
        }
        if (auto x = As<uint64_t>(a[0]), y = As<uint64_t>(a[1]); x && y) {
          uint64_t r;
          return __builtin_mul_overflow(*x, *y, &r) ? Error("unsigned integer overflow") : Value{r};
        }
        if (auto x = As<double>(a[0]), y = As<double>(a[1]); x && y) return Value{*x * *y};
        return NoSuchOverload("_*_");
      }));
  def("_/_", false, {"int,int->int", "uint,uint->uint", "double,double->double"}, simple([](Args a) -> Value {
        if (auto x = As<int64_t>(a[0]), y = As<int64_t>(a[1]); x && y) {
          if (*y == 0) return Error("division by zero");
          if (*x == kInt64Min && *y == -1) return Overflow();
          return Int(*x / *y);
        }
        if (auto x = As<uint64_t>(a[0]), y = As<uint64_t>(a[1]); x && y) {
          return *y == 0 ? Error("division by zero") : Value{*x / *y};
        }
        if (auto x = As<double>(a[0]), y = As<double>(a[1]); x && y) return Value{*x / *y};
        return NoSuchOverload("_/_");
      }));
  def("_%_", false, {"int,int->int", "uint,uint->uint"}, simple([](Args a) -> Value {
        if (auto x = As<int64_t>(a[0]), y = As<int64_t>(a[1]); x && y) {
          if (*y == 0) return Error("modulus by zero");
          if (*x == kInt64Min && *y == -1) return Overflow();
          return Int(*x % *y);
        }
        if (auto x = As<uint64_t>(a[0]), y = As<uint64_t>(a[1]); x && y) {
          return *y == 0 ? Error("modulus by zero") : Value{*x % *y};
        }
        return NoSuchOverload("_%_");
      }));

  def("_==_", false, {"A,A->bool"}, simple([](Args a) { return Equal(a[0], a[1]); }));
  def("_!=_", false, {"A,A->bool"}, simple([](Args a) {
        // cel-go: anything but a true equality is "not equal", even an equality error.
        Value eq = Equal(a[0], a[1]);
        const bool* b = eq.get<bool>();
        return Bool(!(b && *b));
      }));
  static constexpr std::string_view kOrderSigs[] = {
      "bool,bool->bool", "int,int->bool", "uint,uint->bool", "double,double->bool", "string,string->bool",
      "int,uint->bool", "int,double->bool", "uint,int->bool", "uint,double->bool", "double,int->bool",
      "double,uint->bool"};
  auto order = [&](std::string_view op, std::function<bool(int)> want) {
    Function f{op, false, {}, simple([op, want](Args a) { return Order(op, a, want); })};
    for (std::string_view s : kOrderSigs) f.overloads.push_back(ParseOverload(s));
    fns.push_back(std::move(f));
  };
  order("_<_", [](int c) { return c < 0; });
  order("_<=_", [](int c) { return c <= 0; });
  order("_>_", [](int c) { return c > 0; });
  order("_>=_", [](int c) { return c >= 0; });
  def("@in", false, {"A,list(A)->bool", "A,map(A,B)->bool"}, simple([](Args a) { return Contains(a[1], a[0]); }));
  def("_[_]", false, {"list(A),int->A", "map(A,B),A->B"}, simple([](Args a) { return Index(a[0], a[1]); }));

  auto size_impl = simple([](Args a) -> Value {
    if (auto s = As<std::string>(a[0])) return Int(CodePointCount(*s));
    if (auto l = ListOf(a[0])) return Int(static_cast<int64_t>(l->size()));
    if (auto m = As<DeviceMap>(a[0])) return Int(MapSize(*m));
    return NoSuchOverload("size");
  });
  def("size", false, {"string->int", "list(A)->int", "map(A,B)->int"}, size_impl);
  def("size", true, {"string->int", "list(A)->int", "map(A,B)->int"}, size_impl);

  def("int", false, {"int->int", "uint->int", "double->int", "string->int"}, simple([](Args a) -> Value {
        if (auto i = As<int64_t>(a[0])) return Int(*i);
        if (auto u = As<uint64_t>(a[0])) return *u > static_cast<uint64_t>(kInt64Max) ? Error("integer overflow") : Int(static_cast<int64_t>(*u));
        if (auto d = As<double>(a[0])) {
          if (std::isnan(*d) || std::isinf(*d) || *d <= -9223372036854775808.0 || *d >= 9223372036854775807.0) return Overflow();
          return Int(static_cast<int64_t>(*d));
        }
        if (auto s = As<std::string>(a[0])) {
          std::optional<int64_t> v = ParseGoInt(*s);
          return v ? Int(*v) : Error(StrCat("cannot convert \"", *s, "\" to int"));
        }
        return NoSuchOverload("int");
      }));
  def("uint", false, {"int->uint", "uint->uint", "double->uint", "string->uint"}, simple([](Args a) -> Value {
        if (auto u = As<uint64_t>(a[0])) return Value{*u};
        if (auto i = As<int64_t>(a[0])) return *i < 0 ? Error("unsigned integer overflow") : Value{static_cast<uint64_t>(*i)};
        if (auto d = As<double>(a[0])) {
          if (std::isnan(*d) || *d < 0 || *d >= 18446744073709551615.0) return Error("unsigned integer overflow");
          return Value{static_cast<uint64_t>(*d)};
        }
        if (auto s = As<std::string>(a[0])) {
          std::optional<uint64_t> v = ParseGoUint(*s);
          return v ? Value{*v} : Error(StrCat("cannot convert \"", *s, "\" to uint"));
        }
        return NoSuchOverload("uint");
      }));
  def("double", false, {"int->double", "uint->double", "double->double", "string->double"}, simple([](Args a) -> Value {
        if (auto d = As<double>(a[0])) return Value{*d};
        if (auto i = As<int64_t>(a[0])) return Value{static_cast<double>(*i)};
        if (auto u = As<uint64_t>(a[0])) return Value{static_cast<double>(*u)};
        if (auto s = As<std::string>(a[0])) {
          std::optional<double> v = ParseGoFloat(*s);
          return v ? Value{*v} : Error(StrCat("cannot convert \"", *s, "\" to double"));
        }
        return NoSuchOverload("double");
      }));
  def("string", false, {"int->string", "uint->string", "double->string", "string->string", "bool->string"},
      simple([](Args a) -> Value {
        if (auto s = As<std::string>(a[0])) return Str(*s);
        if (auto i = As<int64_t>(a[0])) return Str(std::to_string(*i));
        if (auto u = As<uint64_t>(a[0])) return Str(std::to_string(*u));
        if (auto d = As<double>(a[0])) return Str(FormatDouble(*d));
        if (auto b = As<bool>(a[0])) return Str(*b ? "true" : "false");
        return NoSuchOverload("string");
      }));
  def("bool", false, {"bool->bool", "string->bool"}, simple([](Args a) -> Value {
        if (auto b = As<bool>(a[0])) return Bool(*b);
        if (auto s = As<std::string>(a[0])) {
          static constexpr std::string_view kTrue[] = {"1", "t", "T", "TRUE", "true", "True"};
          static constexpr std::string_view kFalse[] = {"0", "f", "F", "FALSE", "false", "False"};
          for (std::string_view t : kTrue) if (*s == t) return Bool(true);
          for (std::string_view f : kFalse) if (*s == f) return Bool(false);
          return Error(StrCat("type conversion error from 'string' to 'bool'"));
        }
        return NoSuchOverload("bool");
      }));
  def("dyn", false, {"A->dyn"}, simple([](Args a) { return a[0]; }));

  auto string_fn = [&](std::string_view name, std::initializer_list<std::string_view> sigs,
                       std::function<Value(const std::string&, Args)> f) {
    def(name, true, sigs, simple([name, f = std::move(f)](Args a) -> Value {
          const std::string* s = As<std::string>(a[0]);
          if (!s) return NoSuchOverload(name);
          return f(*s, a.subspan(1));
        }));
  };
  auto str_arg = [](Args a, size_t i) { return As<std::string>(a[i]); };
  auto int_arg = [](Args a, size_t i) { return As<int64_t>(a[i]); };

  auto matches = [](Args a, const CallSite& site) -> Value {
    const re2::RE2* compiled = site.regex;
    auto s = As<std::string>(a[0]), p = As<std::string>(a[1]);
    if (!s || !p) return NoSuchOverload("matches");
    if (compiled != nullptr) return Bool(re2::RE2::PartialMatch(*s, *compiled));
    re2::RE2 re(*p, re2::RE2::Quiet);
    if (!re.ok()) return Error(StrCat("invalid regular expression \"", *p, "\": ", re.error()));
    return Bool(re2::RE2::PartialMatch(*s, re));
  };
  def("matches", false, {"string,string->bool"}, matches);
  def("matches", true, {"string,string->bool"}, matches);
  string_fn("contains", {"string,string->bool"}, [=](const std::string& s, Args a) -> Value {
    auto x = str_arg(a, 0);
    return x ? Bool(s.find(*x) != std::string::npos) : NoSuchOverload("contains");
  });
  string_fn("startsWith", {"string,string->bool"}, [=](const std::string& s, Args a) -> Value {
    auto x = str_arg(a, 0);
    return x ? Bool(s.compare(0, x->size(), *x) == 0 && s.size() >= x->size()) : NoSuchOverload("startsWith");
  });
  string_fn("endsWith", {"string,string->bool"}, [=](const std::string& s, Args a) -> Value {
    auto x = str_arg(a, 0);
    return x ? Bool(s.size() >= x->size() && s.compare(s.size() - x->size(), x->size(), *x) == 0)
             : NoSuchOverload("endsWith");
  });
  string_fn("charAt", {"string,int->string"}, [=](const std::string& s, Args a) -> Value {
    auto i = int_arg(a, 0);
    if (!i) return NoSuchOverload("charAt");
    std::u32string r = DecodeUtf8(s);
    if (*i < 0 || *i > static_cast<int64_t>(r.size())) return Error(StrCat("index out of range: ", *i));
    return Str(*i == static_cast<int64_t>(r.size()) ? "" : EncodeUtf8(std::u32string(1, r[*i])));
  });
  string_fn("lowerAscii", {"string->string"}, [](const std::string& s, Args) { return Str(AsciiCase(s, false)); });
  string_fn("upperAscii", {"string->string"}, [](const std::string& s, Args) { return Str(AsciiCase(s, true)); });
  string_fn("trim", {"string->string"}, [](const std::string& s, Args) {
    std::u32string r = DecodeUtf8(s);
    size_t b = 0, e = r.size();
    while (b < e && IsGoSpace(r[b])) ++b;
    while (e > b && IsGoSpace(r[e - 1])) --e;
    return Str(EncodeUtf8(std::u32string_view(r).substr(b, e - b)));
  });
  string_fn("replace", {"string,string,string->string", "string,string,string,int->string"},
            [=](const std::string& s, Args a) -> Value {
              auto o = str_arg(a, 0), n = str_arg(a, 1);
              const int64_t* count = a.size() > 2 ? int_arg(a, 2) : nullptr;
              if (!o || !n || (a.size() > 2 && !count)) return NoSuchOverload("replace");
              return Str(GoReplace(s, *o, *n, count ? *count : -1));
            });
  string_fn("split", {"string,string->list(string)", "string,string,int->list(string)"},
            [=](const std::string& s, Args a) -> Value {
              auto sep = str_arg(a, 0);
              const int64_t* count = a.size() > 1 ? int_arg(a, 1) : nullptr;
              if (!sep || (a.size() > 1 && !count)) return NoSuchOverload("split");
              return Value{ListPtr(std::make_shared<ValueList>(GoSplit(s, *sep, count ? *count : -1)))};
            });
  string_fn("substring", {"string,int->string", "string,int,int->string"}, [=](const std::string& s, Args a) -> Value {
    auto start = int_arg(a, 0);
    const int64_t* end = a.size() > 1 ? int_arg(a, 1) : nullptr;
    if (!start || (a.size() > 1 && !end)) return NoSuchOverload("substring");
    std::u32string r = DecodeUtf8(s);
    int64_t n = static_cast<int64_t>(r.size());
    int64_t stop = end ? *end : n;
    if (end && *start > *end) return Error(StrCat("invalid substring range. start: ", *start, ", end: ", *end));
    if (*start < 0 || *start > n) return Error(StrCat("index out of range: ", *start));
    if (stop < 0 || stop > n) return Error(StrCat("index out of range: ", stop));
    return Str(EncodeUtf8(std::u32string_view(r).substr(*start, stop - *start)));
  });

  auto index_of = [=, &simple](bool last) {
    return simple([=](Args a) -> Value {
      std::string_view name = last ? "lastIndexOf" : "indexOf";
      if (auto s = As<std::string>(a[0])) {
        auto sub = str_arg(a, 1);
        const int64_t* off = a.size() > 2 ? int_arg(a, 2) : nullptr;
        if (!sub || (a.size() > 2 && !off)) return NoSuchOverload(name);
        return IndexOf(*s, *sub, off ? *off : 0, last, off != nullptr);
      }
      if (auto l = ListOf(a[0]); l && a.size() == 2) {
        int64_t n = static_cast<int64_t>(l->size());
        for (int64_t k = 0; k < n; ++k) {
          int64_t i = last ? n - 1 - k : k;
          Value eq = Equal((*l)[i], a[1]);
          if (const bool* b = eq.get<bool>(); b && *b) return Int(i);
        }
        return Int(-1);
      }
      return NoSuchOverload(name);
    });
  };
  def("indexOf", true, {"string,string->int", "string,string,int->int", "list(A),A->int"}, index_of(false));
  def("lastIndexOf", true, {"string,string->int", "string,string,int->int", "list(A),A->int"}, index_of(true));
  def("join", true, {"list(string)->string", "list(string),string->string"}, simple([](Args a) -> Value {
        const ValueList* l = ListOf(a[0]);
        const std::string* sep = a.size() > 1 ? As<std::string>(a[1]) : nullptr;
        if (!l || (a.size() > 1 && !sep)) return NoSuchOverload("join");
        std::string out;
        for (size_t i = 0; i < l->size(); ++i) {
          const std::string* s = As<std::string>((*l)[i]);
          if (!s) return NoSuchOverload("join");
          if (i > 0 && sep) out += *sep;
          out += *s;
        }
        return Str(std::move(out));
      }));

  // Kubernetes' lists library: isSorted, sum, min, max (indexOf, lastIndexOf above), includes.
  auto comparer = [](const Value& v) { return IsNumber(v) || As<std::string>(v) || As<bool>(v); };
  def("isSorted", true, {"list(int)->bool", "list(uint)->bool", "list(double)->bool", "list(bool)->bool",
                         "list(string)->bool"},
      simple([comparer](Args a) -> Value {
        const ValueList* l = ListOf(a[0]);
        if (!l) return NoSuchOverload("isSorted");
        for (size_t i = 0; i < l->size(); ++i) {
          if (!comparer((*l)[i])) return NoSuchOverload("isSorted");
          if (i > 0 && CompareValues((*l)[i - 1], (*l)[i]) == 1) return Bool(false);
        }
        return Bool(true);
      }));
  auto extreme = [&](std::string_view name, int prefer) {
    def(name, true, {"list(int)->int", "list(uint)->uint", "list(double)->double", "list(bool)->bool",
                     "list(string)->string"},
        simple([name, prefer, comparer](Args a) -> Value {
          const ValueList* l = ListOf(a[0]);
          if (!l) return NoSuchOverload(name);
          const Value* best = nullptr;
          for (const Value& v : *l) {
            if (!comparer(v)) return NoSuchOverload(name);
            // An ordering error (mixed types, NaN) keeps the current one, as upstream.
            if (best == nullptr || CompareValues(*best, v) == prefer) best = &v;
          }
          if (best == nullptr) return Error(StrCat(name, " called on empty list"));
          return *best;
        }));
  };
  extreme("min", 1);
  extreme("max", -1);
  def("sum", true, {"list(int)->int", "list(uint)->uint", "list(double)->double"},
      [](Args a, const CallSite& site) -> Value {
        const ValueList* l = ListOf(a[0]);
        if (!l) return NoSuchOverload("sum");
        // The zero of the overload the checker chose. With several (a list of dyn), cel-go's
        // dispatcher takes the first whose list type fits the first element (int for []).
        static const Value kZeros[] = {Int(0), Value{uint64_t{0}}, Value{0.0}};
        int overload = site.overload;
        if (overload < 0) {
          overload = l->empty() || As<int64_t>(l->front()) ? 0 : As<uint64_t>(l->front()) ? 1
                   : As<double>(l->front())                ? 2 : -1;
          if (overload < 0) return NoSuchOverload("sum");
        }
        Value acc = kZeros[overload];
        const int add = FindFunction("_+_", false);
        for (const Value& v : *l) {
          if (!IsNumber(v)) return NoSuchOverload("sum");
          Value pair[] = {acc, v};
          acc = CallFunction(add, pair);
          if (acc.is_error()) return acc;
        }
        return acc;
      });
  def("includes", true, {"dyn,dyn->bool"}, simple([](Args a) -> Value {
        auto equal = [](const Value& x, const Value& y) {
          Value eq = Equal(x, y);
          const bool* b = eq.get<bool>();
          return b && *b;
        };
        if (const ValueList* l = ListOf(a[0])) {
          for (const Value& v : *l) {
            if (equal(v, a[1])) return Bool(true);
          }
          return Bool(false);
        }
        return Bool(equal(a[0], a[1]));
      }));

  // Kubernetes' quantity library.
  def("quantity", false, {"string->Quantity"}, simple([](Args a) -> Value {
        const std::string* s = As<std::string>(a[0]);
        if (!s) return NoSuchOverload("quantity");
        std::optional<KubeQuantity> q = KubeQuantity::Parse(*s);
        return q ? Value{*q} : Error("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
      }));
  def("isQuantity", false, {"string->bool"}, simple([](Args a) -> Value {
        const std::string* s = As<std::string>(a[0]);
        return s ? Bool(KubeQuantity::Parse(*s).has_value()) : NoSuchOverload("isQuantity");
      }));
  auto quantity_fn = [&](std::string_view name, std::initializer_list<std::string_view> sigs,
                         std::function<Value(const KubeQuantity&, Args)> f) {
    def(name, true, sigs, simple([name, f = std::move(f)](Args a) -> Value {
          const KubeQuantity* q = As<KubeQuantity>(a[0]);
          return q ? f(*q, a.subspan(1)) : NoSuchOverload(name);
        }));
  };
  // Declared as a global function upstream (sign(q)), although its documentation shows q.sign().
  def("sign", false, {"Quantity->int"}, simple([](Args a) -> Value {
        const KubeQuantity* q = As<KubeQuantity>(a[0]);
        return q ? Int(q->Sign()) : NoSuchOverload("sign");
      }));
  quantity_fn("asInteger", {"Quantity->int"}, [](const KubeQuantity& q, Args) {
    std::optional<int64_t> v = q.AsInt64();
    return v ? Int(*v) : Error("cannot convert value to integer");
  });
  quantity_fn("isInteger", {"Quantity->bool"}, [](const KubeQuantity& q, Args) { return Bool(q.AsInt64().has_value()); });
  auto arith = [&](std::string_view name, bool add) {
    quantity_fn(name, {"Quantity,Quantity->Quantity", "Quantity,int->Quantity"},
                [name, add](const KubeQuantity& q, Args a) -> Value {
                  KubeQuantity other;
                  if (auto o = As<KubeQuantity>(a[0])) {
                    other = *o;
                  } else if (auto i = As<int64_t>(a[0])) {
                    other = KubeQuantity::FromInt(*i);
                  } else {
                    return NoSuchOverload(name);
                  }
                  return QuantityResult(add ? KubeQuantity::Add(q, other) : KubeQuantity::Sub(q, other));
                });
  };
  arith("add", true);
  arith("sub", false);

  // Kubernetes' semver library.
  auto semver_parse = [&simple](bool test) {
    return simple([test](Args a) -> Value {
      const std::string* s = As<std::string>(a[0]);
      const bool* normalize = a.size() > 1 ? As<bool>(a[1]) : nullptr;
      if (!s || (a.size() > 1 && !normalize)) return NoSuchOverload(test ? "isSemver" : "semver");
      std::optional<SemanticVersion> v = SemanticVersion::Parse(*s, normalize && *normalize);
      if (test) return Bool(v.has_value());
      if (!v) return Error(StrCat("invalid semantic version \"", *s, "\""));
      return Value{SemverPtr(std::make_shared<const SemanticVersion>(std::move(*v)))};
    });
  };
  def("semver", false, {"string->Semver", "string,bool->Semver"}, semver_parse(false));
  def("isSemver", false, {"string->bool", "string,bool->bool"}, semver_parse(true));
  auto semver_field = [&](std::string_view name, uint64_t SemanticVersion::*field) {
    def(name, true, {"Semver->int"}, simple([name, field](Args a) -> Value {
          const SemverPtr* v = As<SemverPtr>(a[0]);
          return v ? Int(static_cast<int64_t>((**v).*field)) : NoSuchOverload(name);
        }));
  };
  semver_field("major", &SemanticVersion::major);
  semver_field("minor", &SemanticVersion::minor);
  semver_field("patch", &SemanticVersion::patch);

  // compareTo / isGreaterThan / isLessThan on both Quantity and Semver.
  auto compare_fn = [&](std::string_view name, std::function<Value(int)> result, std::string_view ret) {
    std::string qsig = StrCat("Quantity,Quantity->", ret), ssig = StrCat("Semver,Semver->", ret);
    Function f{name, true, {ParseOverload(qsig), ParseOverload(ssig)},
               simple([name, result](Args a) -> Value {
                 if (auto x = As<KubeQuantity>(a[0])) {
                   auto y = As<KubeQuantity>(a[1]);
                   return y ? result(KubeQuantity::Compare(*x, *y)) : NoSuchOverload(name);
                 }
                 if (auto x = As<SemverPtr>(a[0])) {
                   auto y = As<SemverPtr>(a[1]);
                   return y ? result(SemanticVersion::Compare(**x, **y)) : NoSuchOverload(name);
                 }
                 return NoSuchOverload(name);
               })};
    fns.push_back(std::move(f));
  };
  compare_fn("compareTo", [](int c) { return Int(c); }, "int");
  compare_fn("isGreaterThan", [](int c) { return Bool(c > 0); }, "bool");
  compare_fn("isLessThan", [](int c) { return Bool(c < 0); }, "bool");
  return fns;
}

const std::vector<Function>& Functions() {
  static const std::vector<Function>* fns = new std::vector<Function>(BuildFunctions());
  return *fns;
}

}  // namespace

std::string Type::Name() const {
  switch (kind) {
    case K::kDyn: return "dyn";
    case K::kNull: return "null_type";
    case K::kBool: return "bool";
    case K::kInt: return "int";
    case K::kUint: return "uint";
    case K::kDouble: return "double";
    case K::kString: return "string";
    case K::kList: return StrCat("list(", params[0].Name(), ")");
    case K::kMap: return StrCat("map(", params[0].Name(), ", ", params[1].Name(), ")");
    case K::kQuantity: return "kubernetes.Quantity";
    case K::kSemver: return "kubernetes.Semver";
    case K::kDevice: return "kubernetes.DRADevice";
    case K::kParam: return std::string(1, param_name);
  }
  return "?";
}

bool operator==(const Type& a, const Type& b) {
  return a.kind == b.kind && a.params == b.params && a.param_name == b.param_name;
}

int FindFunction(std::string_view name, bool member) {
  const std::vector<Function>& fns = Functions();
  for (size_t i = 0; i < fns.size(); ++i) {
    if (fns[i].name == name && fns[i].member == member) return static_cast<int>(i);
  }
  return -1;
}

const std::vector<Overload>& FunctionOverloads(int function) { return Functions()[function].overloads; }

bool IsKnownUnsupported(std::string_view name) {
  static constexpr std::string_view kNames[] = {
      "format", "quote", "reverse", "find", "findAll", "url", "isURL", "getScheme", "getHost",
      "ip", "isIP", "cidr", "isCIDR", "asApproximateFloat", "distinct", "flatten", "range", "slice", "sort", "first", "last", "contains",
      "containsAny", "intersects", "equivalent", "type", "duration", "timestamp", "bytes",
      "getField", "optional", "hasValue", "value", "orValue", "or", "escapeSeparator",
      "indexOf", "lastIndexOf", "size", "matches", "startsWith", "endsWith", "charAt", "join",
      "split", "replace", "substring", "trim", "lowerAscii", "upperAscii", "fieldSelector",
      "labelSelector", "isFieldSelector", "isLabelSelector", "path", "check", "allowed",
      "reason", "errored", "error", "getDate", "getHours", "ceil", "floor", "round", "abs",
      "greatest", "least", "isNaN", "isInf", "isFinite", "sqrt", "bitAnd", "bitOr", "bitXor",
      "bitNot", "bitShiftLeft", "bitShiftRight", "trunc", "sign", "strings", "math", "lists",
      "sets", "base64", "encode", "decode"};
  return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
}

Value CallFunction(int function, std::span<const Value> args, const CallSite& site) {
  return Functions()[function].impl(args, site);
}

Value Equal(const Value& a, const Value& b) {
  bool an = a.get<NullValue>() != nullptr, bn = b.get<NullValue>() != nullptr;
  if (an || bn) return Bool(an && bn);
  if (IsNumber(a)) {
    if (IsNaN(a) || IsNaN(b)) return Bool(false);
    std::optional<int> c = CompareNumbers(a, b);
    return Bool(c && *c == 0);
  }
  if (auto x = As<bool>(a)) {
    auto y = As<bool>(b);
    return Bool(y && *x == *y);
  }
  if (auto x = As<std::string>(a)) {
    auto y = As<std::string>(b);
    return Bool(y && *x == *y);
  }
  if (auto x = ListOf(a)) {
    auto y = ListOf(b);
    if (!y || x->size() != y->size()) return Bool(false);
    for (size_t i = 0; i < x->size(); ++i) {
      Value eq = Equal((*x)[i], (*y)[i]);
      if (const bool* e = eq.get<bool>(); e && !*e) return Bool(false);
    }
    return Bool(true);
  }
  if (auto x = As<DeviceMap>(a)) {
    auto y = As<DeviceMap>(b);
    if (!y) return Bool(false);
    return Bool(x->kind == y->kind && x->map == y->map);
  }
  if (auto x = As<KubeQuantity>(a)) {
    auto y = As<KubeQuantity>(b);
    return y && !y->boxed ? Bool(KubeQuantity::Compare(*x, *y) == 0) : NoSuchOverload("_==_");
  }
  if (auto x = As<SemverPtr>(a)) {
    auto y = As<SemverPtr>(b);
    return y ? Bool(SemanticVersion::Compare(**x, **y) == 0) : NoSuchOverload("_==_");
  }
  if (As<DeviceRef>(a)) return Bool(As<DeviceRef>(b) != nullptr);
  return NoSuchOverload("_==_");
}

Value SelectField(const Value& target, std::string_view name) {
  if (auto d = As<DeviceRef>(target)) {
    const DeviceView& dev = *d->device;
    if (name == "driver") return Str(std::string(dev.driver));
    if (name == "attributes") return Value{DeviceMap{DeviceMap::Kind::kAttributeDomains, dev.attributes}};
    if (name == "capacity") return Value{DeviceMap{DeviceMap::Kind::kCapacityDomains, dev.capacity}};
    if (name == "allowMultipleAllocations") return Bool(dev.allow_multiple_allocations);
    return Error(StrCat("no such key: ", name));
  }
  if (auto m = As<DeviceMap>(target)) return LookupKey(*m, Value{std::string(name)});
  return Error(StrCat("type '", target.TypeName(), "' does not support field selection"));
}

Value HasField(const Value& target, std::string_view name) {
  if (As<DeviceRef>(target)) {
    return Bool(name == "driver" || name == "attributes" || name == "capacity" || name == "allowMultipleAllocations");
  }
  if (auto m = As<DeviceMap>(target)) {
    if (IsDomainMap(*m)) return Bool(true);  // the reference's default-valued map finds every key
    return Bool(MapFind(*m, name).has_value());
  }
  return Error(StrCat("invalid type for field selection: ", target.TypeName()));
}

Value Index(const Value& target, const Value& index) {
  if (auto l = ListOf(target)) {
    int64_t i;
    if (auto x = As<int64_t>(index)) {
      i = *x;
    } else if (auto u = As<uint64_t>(index)) {
      if (*u > static_cast<uint64_t>(kInt64Max)) return Error("unsupported index value");
      i = static_cast<int64_t>(*u);
    } else if (auto d = As<double>(index)) {
      if (*d != std::trunc(*d) || !(std::abs(*d) < 9.2e18)) return Error("unsupported index value");
      i = static_cast<int64_t>(*d);
    } else {
      return Error(StrCat("unsupported index type '", index.TypeName(), "' in list"));
    }
    if (i < 0 || i >= static_cast<int64_t>(l->size())) {
      return Error(StrCat("index out of bounds: ", i));
    }
    return (*l)[i];
  }
  if (auto m = As<DeviceMap>(target)) return LookupKey(*m, index);
  if (As<DeviceRef>(target)) {
    if (auto s = As<std::string>(index)) return SelectField(target, *s);
    return Error("no such key");
  }
  return NoSuchOverload("_[_]");
}

Value Contains(const Value& container, const Value& value) {
  if (auto l = ListOf(container)) {
    for (const Value& e : *l) {
      Value eq = Equal(value, e);
      if (const bool* b = eq.get<bool>(); b && *b) return Bool(true);
    }
    return Bool(false);
  }
  if (auto m = As<DeviceMap>(container)) {
    const std::string* k = As<std::string>(value);
    return Bool(k && MapFind(*m, *k).has_value());
  }
  return NoSuchOverload("@in");
}

Value IterationRange(const Value& range) {
  if (ListOf(range)) return range;
  if (auto m = As<DeviceMap>(range)) {
    auto keys = std::make_shared<ValueList>();
    ForEachKey(*m, [&](const std::string& k) { keys->push_back(Str(k)); });
    return Value{ListPtr(std::move(keys))};
  }
  return Error(StrCat("cannot iterate over a value of type '", range.TypeName(), "'"));
}

std::string RegexError(std::string_view pattern) {
  re2::RE2 re(re2::StringPiece(pattern.data(), pattern.size()), re2::RE2::Quiet);
  return re.ok() ? "" : re.error();
}

}  // namespace tessel::dra::cel
