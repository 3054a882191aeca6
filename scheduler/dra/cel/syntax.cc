// Lexer and recursive-descent parser for CEL, following cel-go's grammar (parser/gen/CEL.g4):
// the same precedence, literal forms, escapes, reserved words, the folding of a leading minus
// into a number literal, and the macros that cel-go expands while parsing.
#include "scheduler/dra/cel/syntax.h"

#include <array>
#include <cstdlib>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "scheduler/util/strings.h"

namespace tessel::dra::cel {
namespace {

enum class Tok : uint8_t {
  kEnd, kIdent, kInt, kUint, kDouble, kString, kBytes,
  kTrue, kFalse, kNull, kIn,
  kDot, kComma, kLParen, kRParen, kLBracket, kRBracket, kLBrace, kRBrace,
  kQuestion, kColon, kPlus, kMinus, kStar, kSlash, kPercent, kNot,
  kEq, kNe, kLt, kLe, kGt, kGe, kAnd, kOr, kBacktick,
};

struct Token {
  Tok kind;
  int position;
  std::string_view text;
  std::string value;  // decoded string literal
};

bool IsLetter(char c) { return absl::ascii_isalpha(c) || c == '_'; }

class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src) {}

  absl::StatusOr<std::vector<Token>> Run() {
    std::vector<Token> out;
    while (true) {
      SkipSpace();
      if (pos_ >= src_.size()) {
        out.push_back({Tok::kEnd, static_cast<int>(pos_), {}, {}});
        return out;
      }
      absl::StatusOr<Token> t = Next();
      if (!t.ok()) return t.status();
      out.push_back(std::move(*t));
    }
  }

 private:
  void SkipSpace() {
    while (pos_ < src_.size()) {
      char c = src_[pos_];
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f') {
        ++pos_;
      } else if (src_.compare(pos_, 2, "//") == 0) {
        while (pos_ < src_.size() && src_[pos_] != '\n') ++pos_;
      } else {
        return;
      }
    }
  }

  absl::Status ErrorAt(size_t at, std::string_view what) {
    return absl::InvalidArgumentError(StrCat(Position(src_, static_cast<int>(at)), ": ", what));
  }

  Token Make(Tok kind, size_t start) {
    return Token{kind, static_cast<int>(start), src_.substr(start, pos_ - start), {}};
  }

  absl::StatusOr<Token> Next() {
    size_t start = pos_;
    char c = src_[pos_];
    auto peek = [&](size_t k) { return pos_ + k < src_.size() ? src_[pos_ + k] : '\0'; };
    if (absl::ascii_isdigit(c) || (c == '.' && absl::ascii_isdigit(peek(1)))) return Number(start);
    if ((c == 'r' || c == 'R' || c == 'b' || c == 'B') && (peek(1) == '"' || peek(1) == '\'')) {
      return String(start);
    }
    if ((c == 'r' || c == 'R' || c == 'b' || c == 'B') &&
        (peek(1) == 'r' || peek(1) == 'R' || peek(1) == 'b' || peek(1) == 'B') &&
        (peek(1) | 0x20) != (c | 0x20) && (peek(2) == '"' || peek(2) == '\'')) {
      return String(start);
    }
    if (c == '"' || c == '\'') return String(start);
    if (IsLetter(c)) {
      while (pos_ < src_.size() && (IsLetter(src_[pos_]) || absl::ascii_isdigit(src_[pos_]))) ++pos_;
      std::string_view word = src_.substr(start, pos_ - start);
      Tok kind = word == "true" ? Tok::kTrue : word == "false" ? Tok::kFalse
               : word == "null" ? Tok::kNull : word == "in" ? Tok::kIn : Tok::kIdent;
      return Make(kind, start);
    }
    static constexpr std::pair<std::string_view, Tok> kTwo[] = {
        {"==", Tok::kEq}, {"!=", Tok::kNe}, {"<=", Tok::kLe}, {">=", Tok::kGe},
        {"&&", Tok::kAnd}, {"||", Tok::kOr}};
    for (const auto& [text, kind] : kTwo) {
      if (src_.compare(pos_, 2, text) == 0) {
        pos_ += 2;
        return Make(kind, start);
      }
    }
    static constexpr std::pair<char, Tok> kOne[] = {
        {'.', Tok::kDot}, {',', Tok::kComma}, {'(', Tok::kLParen}, {')', Tok::kRParen},
        {'[', Tok::kLBracket}, {']', Tok::kRBracket}, {'{', Tok::kLBrace}, {'}', Tok::kRBrace},
        {'?', Tok::kQuestion}, {':', Tok::kColon}, {'+', Tok::kPlus}, {'-', Tok::kMinus},
        {'*', Tok::kStar}, {'/', Tok::kSlash}, {'%', Tok::kPercent}, {'!', Tok::kNot},
        {'<', Tok::kLt}, {'>', Tok::kGt}, {'`', Tok::kBacktick}};
    for (const auto& [ch, kind] : kOne) {
      if (c == ch) {
        ++pos_;
        return Make(kind, start);
      }
    }
    return ErrorAt(start, StrCat("Syntax error: token recognition error at: '", std::string(1, c), "'"));
  }

  absl::StatusOr<Token> Number(size_t start) {
    auto digits = [&] {
      size_t s = pos_;
      while (pos_ < src_.size() && absl::ascii_isdigit(src_[pos_])) ++pos_;
      return pos_ > s;
    };
    if (src_.compare(pos_, 2, "0x") == 0 && pos_ + 2 < src_.size() && absl::ascii_isxdigit(src_[pos_ + 2])) {
      pos_ += 2;
      while (pos_ < src_.size() && absl::ascii_isxdigit(src_[pos_])) ++pos_;
      if (pos_ < src_.size() && (src_[pos_] == 'u' || src_[pos_] == 'U')) {
        ++pos_;
        return Make(Tok::kUint, start);
      }
      return Make(Tok::kInt, start);
    }
    bool is_double = false;
    digits();
    if (pos_ + 1 < src_.size() && src_[pos_] == '.' && absl::ascii_isdigit(src_[pos_ + 1])) {
      ++pos_;
      digits();
      is_double = true;
    }
    if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      size_t save = pos_;
      ++pos_;
      if (pos_ < src_.size() && (src_[pos_] == '+' || src_[pos_] == '-')) ++pos_;
      if (digits()) {
        is_double = true;
      } else {
        pos_ = save;
      }
    }
    if (!is_double && pos_ < src_.size() && (src_[pos_] == 'u' || src_[pos_] == 'U')) {
      ++pos_;
      return Make(Tok::kUint, start);
    }
    return Make(is_double ? Tok::kDouble : Tok::kInt, start);
  }

  absl::StatusOr<Token> String(size_t start) {
    bool raw = false, bytes = false;
    while (src_[pos_] != '"' && src_[pos_] != '\'') {
      char p = static_cast<char>(src_[pos_] | 0x20);
      raw |= p == 'r';
      bytes |= p == 'b';
      ++pos_;
    }
    char q = src_[pos_];
    bool triple = src_.compare(pos_, 3, std::string(3, q)) == 0;
    pos_ += triple ? 3 : 1;
    std::string value;
    while (true) {
      if (pos_ >= src_.size()) return ErrorAt(start, "Syntax error: unterminated string literal");
      char c = src_[pos_];
      if (triple ? src_.compare(pos_, 3, std::string(3, q)) == 0 : c == q) {
        pos_ += triple ? 3 : 1;
        break;
      }
      if (!triple && (c == '\n' || c == '\r')) {
        return ErrorAt(start, "Syntax error: newline in string literal");
      }
      if (c == '\\' && !raw) {
        absl::Status st = Escape(value);
        if (!st.ok()) return st;
        continue;
      }
      value.push_back(c);
      ++pos_;
    }
    Token t = Make(bytes ? Tok::kBytes : Tok::kString, start);
    t.value = std::move(value);
    return t;
  }

  absl::Status Escape(std::string& out) {
    size_t at = pos_;
    ++pos_;
    if (pos_ >= src_.size()) return ErrorAt(at, "Syntax error: bad escape sequence");
    char c = src_[pos_++];
    static constexpr std::pair<char, char> kSimple[] = {
        {'a', '\a'}, {'b', '\b'}, {'f', '\f'}, {'n', '\n'}, {'r', '\r'}, {'t', '\t'},
        {'v', '\v'}, {'"', '"'}, {'\'', '\''}, {'\\', '\\'}, {'?', '?'}, {'`', '`'}};
    for (const auto& [e, v] : kSimple) {
      if (c == e) {
        out.push_back(v);
        return absl::OkStatus();
      }
    }
    auto hex = [&](int n) -> std::optional<uint32_t> {
      uint32_t v = 0;
      for (int i = 0; i < n; ++i) {
        if (pos_ >= src_.size() || !absl::ascii_isxdigit(src_[pos_])) return std::nullopt;
        char h = src_[pos_++];
        v = v * 16 + (absl::ascii_isdigit(h) ? h - '0' : (h | 0x20) - 'a' + 10);
      }
      return v;
    };
    std::optional<uint32_t> cp;
    if (c == 'x' || c == 'X') {
      cp = hex(2);
    } else if (c == 'u') {
      cp = hex(4);
    } else if (c == 'U') {
      cp = hex(8);
    } else if (c >= '0' && c <= '3') {
      uint32_t v = c - '0';
      for (int i = 0; i < 2; ++i) {
        if (pos_ >= src_.size() || src_[pos_] < '0' || src_[pos_] > '7') return ErrorAt(at, "Syntax error: bad octal escape");
        v = v * 8 + (src_[pos_++] - '0');
      }
      cp = v;
    }
    if (!cp || *cp > 0x10FFFF || (*cp >= 0xD800 && *cp < 0xE000)) {
      return ErrorAt(at, "Syntax error: invalid escape sequence");
    }
    out += EncodeUtf8(std::u32string(1, static_cast<char32_t>(*cp)));
    return absl::OkStatus();
  }

  std::string_view src_;
  size_t pos_ = 0;
};

constexpr std::array<std::string_view, 19> kReserved = {
    "as", "break", "const", "continue", "else", "for", "function", "if", "import", "let",
    "loop", "package", "namespace", "return", "var", "void", "while", "in", "null"};

constexpr int kMaxDepth = 250;  // cel-go's default parse recursion limit

using ExprPtr = std::unique_ptr<Expr>;

ExprPtr Node(Expr::Kind kind, int position) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->position = position;
  return e;
}

ExprPtr Call(std::string name, int position, std::vector<ExprPtr> args, bool member = false) {
  ExprPtr e = Node(Expr::Kind::kCall, position);
  e->name = std::move(name);
  e->args = std::move(args);
  e->member = member;
  return e;
}

class Parser {
 public:
  Parser(std::string_view src, std::vector<Token> tokens) : src_(src), toks_(std::move(tokens)) {}

  absl::StatusOr<ExprPtr> Run() {
    ExprPtr e = ParseExpr();
    if (e && Peek().kind != Tok::kEnd) Fail(Peek(), StrCat("Syntax error: unexpected '", Peek().text, "'"));
    if (!error_.ok()) return error_;
    return e;
  }

 private:
  const Token& Peek(int k = 0) const { return toks_[std::min(i_ + k, toks_.size() - 1)]; }
  const Token& Take() { return toks_[std::min(i_++, toks_.size() - 1)]; }
  bool Accept(Tok k) {
    if (Peek().kind != k) return false;
    ++i_;
    return true;
  }
  std::nullptr_t Fail(const Token& at, std::string_view what) {
    if (error_.ok()) error_ = absl::InvalidArgumentError(StrCat(Position(src_, at.position), ": ", what));
    return nullptr;
  }
  std::nullptr_t Expect(Tok, std::string_view what) {
    return Fail(Peek(), StrCat("Syntax error: expected ", what, ", found '",
                               Peek().kind == Tok::kEnd ? "<EOF>" : Peek().text, "'"));
  }

  struct DepthGuard {
    Parser* p;
    explicit DepthGuard(Parser* parser) : p(parser) { ++p->depth_; }
    ~DepthGuard() { --p->depth_; }
  };

  ExprPtr ParseExpr() {
    DepthGuard guard(this);
    if (depth_ > kMaxDepth) return Fail(Peek(), "expression recursion limit exceeded");
    ExprPtr cond = ParseOr();
    if (!cond || Peek().kind != Tok::kQuestion) return cond;
    int pos = Take().position;
    ExprPtr a = ParseOr();
    if (!a) return nullptr;
    if (!Accept(Tok::kColon)) return Expect(Tok::kColon, "':'");
    ExprPtr b = ParseExpr();
    if (!b) return nullptr;
    ExprPtr e = Node(Expr::Kind::kConditional, pos);
    e->args.push_back(std::move(cond));
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return e;
  }

  ExprPtr ParseLogical(Tok op, Expr::Kind kind, ExprPtr (Parser::*next)()) {
    ExprPtr lhs = (this->*next)();
    while (lhs && Peek().kind == op) {
      int pos = Take().position;
      ExprPtr rhs = (this->*next)();
      if (!rhs) return nullptr;
      ExprPtr e = Node(kind, pos);
      e->args.push_back(std::move(lhs));
      e->args.push_back(std::move(rhs));
      lhs = std::move(e);
    }
    return lhs;
  }
  ExprPtr ParseOr() { return ParseLogical(Tok::kOr, Expr::Kind::kOr, &Parser::ParseAnd); }
  ExprPtr ParseAnd() { return ParseLogical(Tok::kAnd, Expr::Kind::kAnd, &Parser::ParseRelation); }

  ExprPtr ParseBinary(const std::vector<std::pair<Tok, std::string_view>>& ops, ExprPtr (Parser::*next)()) {
    ExprPtr lhs = (this->*next)();
    while (lhs) {
      const std::string_view* fn = nullptr;
      for (const auto& [tok, name] : ops) {
        if (Peek().kind == tok) fn = &name;
      }
      if (fn == nullptr) break;
      int pos = Take().position;
      ExprPtr rhs = (this->*next)();
      if (!rhs) return nullptr;
      std::vector<ExprPtr> args;
      args.push_back(std::move(lhs));
      args.push_back(std::move(rhs));
      lhs = Call(std::string(*fn), pos, std::move(args));
    }
    return lhs;
  }
  ExprPtr ParseRelation() {
    static const std::vector<std::pair<Tok, std::string_view>> kOps = {
        {Tok::kLt, "_<_"}, {Tok::kLe, "_<=_"}, {Tok::kGt, "_>_"}, {Tok::kGe, "_>=_"},
        {Tok::kEq, "_==_"}, {Tok::kNe, "_!=_"}, {Tok::kIn, "@in"}};
    return ParseBinary(kOps, &Parser::ParseAdd);
  }
  ExprPtr ParseAdd() {
    static const std::vector<std::pair<Tok, std::string_view>> kOps = {{Tok::kPlus, "_+_"}, {Tok::kMinus, "_-_"}};
    return ParseBinary(kOps, &Parser::ParseMul);
  }
  ExprPtr ParseMul() {
    static const std::vector<std::pair<Tok, std::string_view>> kOps = {
        {Tok::kStar, "_*_"}, {Tok::kSlash, "_/_"}, {Tok::kPercent, "_%_"}};
    return ParseBinary(kOps, &Parser::ParseUnary);
  }

  ExprPtr ParseUnary() {
    Tok op = Peek().kind;
    if (op != Tok::kNot && op != Tok::kMinus) return ParseMember();
    // A single minus before a number is part of the literal (cel-go's Int and Double literal
    // rules), so -9223372036854775808 is an int.
    if (op == Tok::kMinus && (Peek(1).kind == Tok::kInt || Peek(1).kind == Tok::kDouble)) {
      return ParseMember();
    }
    int pos = Peek().position;
    int count = 0;
    while (Peek().kind == op) {
      Take();
      ++count;
    }
    ExprPtr operand = ParseMember();
    if (!operand || count % 2 == 0) return operand;  // cel-go drops an even run of ! or -
    std::vector<ExprPtr> args;
    args.push_back(std::move(operand));
    return Call(op == Tok::kNot ? "!_" : "-_", pos, std::move(args));
  }

  ExprPtr ParseMember() {
    ExprPtr e = ParsePrimary();
    while (e) {
      if (Peek().kind == Tok::kDot) {
        int pos = Take().position;
        if (Peek().kind == Tok::kQuestion) return Fail(Peek(), "unsupported syntax: optional field selection '.?'");
        if (Peek().kind == Tok::kBacktick) return Fail(Peek(), "unsupported syntax: escaped field names");
        if (Peek().kind != Tok::kIdent) return Expect(Tok::kIdent, "a field name");
        const Token& id = Take();
        if (Peek().kind == Tok::kLParen) {
          Take();
          std::vector<ExprPtr> args;
          args.push_back(std::move(e));
          if (!ParseArgs(Tok::kRParen, args)) return nullptr;
          e = MemberCallOrMacro(std::string(id.text), pos, std::move(args));
        } else {
          ExprPtr s = Node(Expr::Kind::kSelect, pos);
          s->name = std::string(id.text);
          s->args.push_back(std::move(e));
          e = std::move(s);
        }
      } else if (Peek().kind == Tok::kLBracket) {
        int pos = Take().position;
        if (Peek().kind == Tok::kQuestion) return Fail(Peek(), "unsupported syntax: optional index '[?'");
        ExprPtr index = ParseExpr();
        if (!index) return nullptr;
        if (!Accept(Tok::kRBracket)) return Expect(Tok::kRBracket, "']'");
        ExprPtr s = Node(Expr::Kind::kIndex, pos);
        s->args.push_back(std::move(e));
        s->args.push_back(std::move(index));
        e = std::move(s);
      } else if (Peek().kind == Tok::kLBrace && e->kind == Expr::Kind::kIdent) {
        return Fail(Peek(), "unsupported syntax: message construction");
      } else {
        break;
      }
    }
    return e;
  }

  bool ParseArgs(Tok close, std::vector<ExprPtr>& args) {
    if (Accept(close)) return true;
    while (true) {
      if (close == Tok::kRBracket && Peek().kind == Tok::kQuestion) {
        Fail(Peek(), "unsupported syntax: optional list element '?'");
        return false;
      }
      ExprPtr a = ParseExpr();
      if (!a) return false;
      args.push_back(std::move(a));
      if (Accept(Tok::kComma)) {
        if (close == Tok::kRBracket && Accept(close)) return true;  // [1, 2,] is allowed
        continue;
      }
      if (Accept(close)) return true;
      Expect(close, close == Tok::kRParen ? "')'" : "']'");
      return false;
    }
  }

  ExprPtr Literal(const Token& t, bool negative) {
    ExprPtr e = Node(Expr::Kind::kLiteral, t.position);
    std::string text = StrCat(negative ? "-" : "", t.text);
    switch (t.kind) {
      case Tok::kInt: {
        bool hex = t.text.size() > 1 && t.text[1] == 'x';
        errno = 0;
        char* end = nullptr;
        std::string digits = hex ? StrCat(negative ? "-" : "", t.text.substr(2)) : text;
        long long v = std::strtoll(digits.c_str(), &end, hex ? 16 : 10);
        if (errno == ERANGE) return Fail(t, StrCat("invalid int literal: ", text));
        e->literal = Value{static_cast<int64_t>(v)};
        return e;
      }
      case Tok::kUint: {
        std::string_view digits = t.text.substr(0, t.text.size() - 1);
        bool hex = digits.size() > 1 && digits[1] == 'x';
        errno = 0;
        std::string d(hex ? digits.substr(2) : digits);
        unsigned long long v = std::strtoull(d.c_str(), nullptr, hex ? 16 : 10);
        if (errno == ERANGE) return Fail(t, StrCat("invalid uint literal: ", t.text));
        e->literal = Value{static_cast<uint64_t>(v)};
        return e;
      }
      case Tok::kDouble: {
        e->literal = Value{std::strtod(text.c_str(), nullptr)};
        return e;
      }
      default:
        return Fail(t, "Syntax error: expected a literal");
    }
  }

  ExprPtr ParsePrimary() {
    const Token& t = Peek();
    switch (t.kind) {
      case Tok::kMinus: {  // only reached before a number (see ParseUnary)
        Take();
        return Literal(Take(), true);
      }
      case Tok::kInt:
      case Tok::kUint:
      case Tok::kDouble:
        return Literal(Take(), false);
      case Tok::kString: {
        ExprPtr e = Node(Expr::Kind::kLiteral, t.position);
        e->literal = Value{Take().value};
        return e;
      }
      case Tok::kBytes:
        return Fail(t, "unsupported: bytes literals");
      case Tok::kTrue:
      case Tok::kFalse: {
        ExprPtr e = Node(Expr::Kind::kLiteral, t.position);
        e->literal = Value{Take().kind == Tok::kTrue};
        return e;
      }
      case Tok::kNull: {
        ExprPtr e = Node(Expr::Kind::kLiteral, Take().position);
        e->literal = Value{NullValue{}};
        return e;
      }
      case Tok::kLParen: {
        Take();
        ExprPtr e = ParseExpr();
        if (!e) return nullptr;
        if (!Accept(Tok::kRParen)) return Expect(Tok::kRParen, "')'");
        return e;
      }
      case Tok::kLBracket: {
        ExprPtr e = Node(Expr::Kind::kList, Take().position);
        if (!ParseArgs(Tok::kRBracket, e->args)) return nullptr;
        return e;
      }
      case Tok::kLBrace:
        return Fail(t, "unsupported syntax: map literals");
      case Tok::kDot:
        return Fail(t, "unsupported syntax: leading '.' (qualified names)");
      case Tok::kIdent: {
        Take();
        std::string name(t.text);
        for (std::string_view r : kReserved) {
          if (name == r) return Fail(t, StrCat("reserved identifier: ", name));
        }
        if (Peek().kind == Tok::kLParen) {
          Take();
          std::vector<ExprPtr> args;
          if (!ParseArgs(Tok::kRParen, args)) return nullptr;
          return GlobalCallOrMacro(std::move(name), t.position, std::move(args));
        }
        ExprPtr e = Node(Expr::Kind::kIdent, t.position);
        e->name = std::move(name);
        return e;
      }
      case Tok::kEnd:
        return Fail(t, "Syntax error: unexpected end of expression");
      default:
        return Fail(t, StrCat("Syntax error: unexpected '", t.text, "'"));
    }
  }

  ExprPtr GlobalCallOrMacro(std::string name, int pos, std::vector<ExprPtr> args) {
    if (name == "has" && args.size() == 1) {
      if (args[0]->kind != Expr::Kind::kSelect) return Fail(Peek(-1), "invalid argument to has() macro");
      args[0]->kind = Expr::Kind::kPresence;
      return std::move(args[0]);
    }
    return Call(std::move(name), pos, std::move(args));
  }

  ExprPtr MemberCallOrMacro(std::string name, int pos, std::vector<ExprPtr> args) {
    // args[0] is the target.
    if (name == "bind" && args.size() == 4 && args[0]->kind == Expr::Kind::kIdent && args[0]->name == "cel") {
      if (args[1]->kind != Expr::Kind::kIdent) return FailAt(args[1]->position, "cel.bind() variable name must be a simple identifier");
      ExprPtr e = Node(Expr::Kind::kBind, pos);
      e->name = args[1]->name;
      e->args.push_back(std::move(args[2]));
      e->args.push_back(std::move(args[3]));
      return e;
    }
    static constexpr std::pair<std::string_view, Expr::Macro> kMacros[] = {
        {"all", Expr::Macro::kAll}, {"exists", Expr::Macro::kExists},
        {"exists_one", Expr::Macro::kExistsOne}, {"map", Expr::Macro::kMap},
        {"filter", Expr::Macro::kFilter}};
    for (const auto& [macro_name, macro] : kMacros) {
      if (name != macro_name) continue;
      size_t n = args.size() - 1;
      bool shape = n == 2 || (n == 3 && macro == Expr::Macro::kMap);
      if (!shape) {
        if (n == 3 && macro != Expr::Macro::kFilter) {
          return FailAt(pos, StrCat("unsupported: the two-variable form of ", name, "()"));
        }
        break;
      }
      if (args[1]->kind != Expr::Kind::kIdent) return FailAt(args[1]->position, "argument must be a simple name");
      ExprPtr e = Node(Expr::Kind::kComprehension, pos);
      e->macro = macro == Expr::Macro::kMap && n == 3 ? Expr::Macro::kMapFilter : macro;
      e->name = args[1]->name;
      e->args.push_back(std::move(args[0]));
      for (size_t k = 2; k < args.size(); ++k) e->args.push_back(std::move(args[k]));
      return e;
    }
    for (std::string_view other : {"existsOne", "transformList", "transformMap", "transformMapEntry",
                                   "optMap", "optFlatMap", "sortBy"}) {
      if (name == other) return FailAt(pos, StrCat("unsupported: the ", name, "() macro"));
    }
    return Call(std::move(name), pos, std::move(args), /*member=*/true);
  }

  std::nullptr_t FailAt(int position, std::string_view what) {
    if (error_.ok()) error_ = absl::InvalidArgumentError(StrCat(Position(src_, position), ": ", what));
    return nullptr;
  }

  std::string_view src_;
  std::vector<Token> toks_;
  size_t i_ = 0;
  int depth_ = 0;
  absl::Status error_;
};

}  // namespace

std::string Position(std::string_view expression, int offset) {
  int line = 1, column = 1;
  for (int i = 0; i < offset && i < static_cast<int>(expression.size()); ++i) {
    if (expression[i] == '\n') {
      ++line;
      column = 1;
    } else if ((static_cast<unsigned char>(expression[i]) & 0xC0) != 0x80) {
      ++column;
    }
  }
  return StrCat(line, ":", column);
}

absl::StatusOr<std::unique_ptr<Expr>> Parse(std::string_view expression) {
  absl::StatusOr<std::vector<Token>> tokens = Lexer(expression).Run();
  if (!tokens.ok()) return tokens.status();
  return Parser(expression, std::move(*tokens)).Run();
}

}  // namespace tessel::dra::cel
