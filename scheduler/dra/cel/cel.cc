// Selector: parse, check and evaluate. The checker gives every node its static type as cel-go's
// does (overloads with type parameters, dyn matching anything, a call that fits several overloads
// with different results being dyn), rejects what the reference rejects at compile time and what
// Tessel does not support, and resolves identifiers to slots. The evaluator walks the tree with
// CEL's error semantics: && and || are commutative over errors, comprehensions follow the macro
// expansions (all/exists stop at a decisive element, the rest are strict).
#include "scheduler/dra/cel/cel.h"

#include <algorithm>
#include <map>

#include "absl/status/status.h"
#include "re2/re2.h"
#include "scheduler/dra/cel/library.h"
#include "scheduler/dra/cel/syntax.h"
#include "scheduler/util/strings.h"

namespace tessel::dra::cel {

using K = Type::Kind;

struct Program {
  std::unique_ptr<Expr> root;
  int slots = 0;
  std::map<const Expr*, std::unique_ptr<re2::RE2>> regexes;  // matches() with a literal pattern
};

namespace {

using Bindings = std::map<char, Type>;

bool Unify(const Type& param, const Type& arg, Bindings& b) {
  if (param.is(K::kParam)) {
    auto it = b.find(param.param_name);
    if (it == b.end()) {
      if (!arg.is(K::kParam)) b[param.param_name] = arg;
      return true;
    }
    if (it->second.is(K::kDyn)) return true;
    if (arg.is(K::kDyn)) {
      it->second = arg;  // as cel-go, the binding widens to the less specific type
      return true;
    }
    return Unify(it->second, arg, b);
  }
  if (param.is(K::kDyn) || arg.is(K::kDyn) || arg.is(K::kParam)) return true;  // kParam: []'s element
  if (param.kind != arg.kind || param.params.size() != arg.params.size()) return false;
  for (size_t i = 0; i < param.params.size(); ++i) {
    if (!Unify(param.params[i], arg.params[i], b)) return false;
  }
  return true;
}

Type Substitute(const Type& t, const Bindings& b) {
  if (t.is(K::kParam)) {
    auto it = b.find(t.param_name);
    if (it != b.end()) return it->second;
    Type free = Type::Of(K::kParam);  // still free (its arguments were empty lists)
    free.param_name = '?';
    return free;
  }
  Type out = t;
  for (Type& p : out.params) p = Substitute(p, b);
  return out;
}

bool HasFree(const Type& t) {
  return t.is(K::kParam) || std::any_of(t.params.begin(), t.params.end(), HasFree);
}

bool BoolOrDyn(const Type& t) { return t.is(K::kBool) || t.is(K::kDyn) || t.is(K::kParam); }

Type DeviceFieldType(std::string_view field) {
  if (field == "driver") return Type::Of(K::kString);
  if (field == "allowMultipleAllocations") return Type::Of(K::kBool);
  if (field == "attributes") return Type::Map(Type::Of(K::kString), Type::Map(Type::Of(K::kString), Type::Of(K::kDyn)));
  if (field == "capacity") {
    return Type::Map(Type::Of(K::kString), Type::Map(Type::Of(K::kString), Type::Of(K::kQuantity)));
  }
  return Type::Of(K::kNull);  // no such field
}

class Checker {
 public:
  Checker(std::string_view src, Program& program) : src_(src), program_(program) {}

  absl::StatusOr<Type> Check(Expr& e) {
    absl::StatusOr<Type> t = Visit(e);
    if (!t.ok()) return t.status();
    return t;
  }

 private:
  absl::Status Fail(const Expr& e, std::string_view what) {
    return absl::InvalidArgumentError(StrCat(Position(src_, e.position), ": ", what));
  }

  absl::StatusOr<Type> Visit(Expr& e) {
    switch (e.kind) {
      case Expr::Kind::kLiteral: return LiteralType(e.literal);
      case Expr::Kind::kIdent: {
        for (auto it = scope_.rbegin(); it != scope_.rend(); ++it) {
          if (it->name == e.name) {
            e.slot = it->slot;
            return it->type;
          }
        }
        if (e.name == "device") return Type::Of(K::kDevice);
        return Fail(e, StrCat("undeclared reference to '", e.name, "'"));
      }
      case Expr::Kind::kSelect:
      case Expr::Kind::kPresence: {
        absl::StatusOr<Type> target = Visit(*e.args[0]);
        if (!target.ok()) return target;
        Type field = FieldType(*target, e.name);
        if (field.is(K::kNull)) {
          return Fail(e, target->is(K::kDevice) ? StrCat("undefined field '", e.name, "'")
                                                : StrCat("type '", target->Name(), "' does not support field selection"));
        }
        return e.kind == Expr::Kind::kPresence ? Type::Of(K::kBool) : field;
      }
      case Expr::Kind::kIndex: {
        if (e.args[0]->kind == Expr::Kind::kIdent && e.args[0]->name == "device" && !InScope("device")) {
          return Fail(e, "unsupported: indexing the device object (use device.<field>)");
        }
        return CallType(e, "_[_]", false);
      }
      case Expr::Kind::kCall: return CallType(e, e.name, e.member);
      case Expr::Kind::kList: {
        Type elem = Type::Of(K::kParam);  // the empty list's element type is still free
        elem.param_name = '?';
        bool first = true;
        for (auto& a : e.args) {
          absl::StatusOr<Type> t = Visit(*a);
          if (!t.ok()) return t;
          // cel-go's homogeneous-literal validator: every element has exactly the first one's
          // type (dyn is a type of its own there).
          if (first) {
            elem = *t;
            first = false;
          } else if (!(elem == *t)) {
            return Fail(*a, StrCat("expected type '", elem.Name(), "' but found '", t->Name(), "'"));
          }
        }
        return Type::List(elem);
      }
      case Expr::Kind::kAnd:
      case Expr::Kind::kOr: {
        for (auto& a : e.args) {
          absl::StatusOr<Type> t = Visit(*a);
          if (!t.ok()) return t;
          if (!BoolOrDyn(*t)) {
            return Fail(e, StrCat("found no matching overload for '", e.kind == Expr::Kind::kAnd ? "_&&_" : "_||_",
                                  "' applied to '", t->Name(), "'"));
          }
        }
        return Type::Of(K::kBool);
      }
      case Expr::Kind::kConditional: {
        std::vector<Type> ts;
        for (auto& a : e.args) {
          absl::StatusOr<Type> t = Visit(*a);
          if (!t.ok()) return t;
          ts.push_back(std::move(*t));
        }
        Bindings b;
        Type a = Type::Of(K::kParam);
        a.param_name = 'A';
        if (!BoolOrDyn(ts[0]) || !Unify(a, ts[1], b) || !Unify(a, ts[2], b)) {
          return Fail(e, StrCat("found no matching overload for '_?_:_' applied to '(", ts[0].Name(), ", ",
                                ts[1].Name(), ", ", ts[2].Name(), ")'"));
        }
        if (ts[1].is(K::kDyn) || ts[2].is(K::kDyn)) return Type::Of(K::kDyn);
        return ts[1];
      }
      case Expr::Kind::kBind: {
        absl::StatusOr<Type> init = Visit(*e.args[0]);
        if (!init.ok()) return init;
        e.slot = Push(e.name, *init);
        absl::StatusOr<Type> body = Visit(*e.args[1]);
        scope_.pop_back();
        return body;
      }
      case Expr::Kind::kComprehension: return ComprehensionType(e);
    }
    return Fail(e, "unsupported expression");
  }

  bool InScope(std::string_view name) const {
    for (const auto& s : scope_) {
      if (s.name == name) return true;
    }
    return false;
  }

  int Push(const std::string& name, Type t) {
    int slot = static_cast<int>(scope_.size());
    scope_.push_back({name, std::move(t), slot});
    program_.slots = std::max(program_.slots, slot + 1);
    return slot;
  }

  static Type LiteralType(const Value& v) {
    switch (v.v.index()) {
      case 0: return Type::Of(K::kNull);
      case 1: return Type::Of(K::kBool);
      case 2: return Type::Of(K::kInt);
      case 3: return Type::Of(K::kUint);
      case 4: return Type::Of(K::kDouble);
      default: return Type::Of(K::kString);
    }
  }

  static Type FieldType(const Type& target, std::string_view name) {
    if (target.is(K::kDevice)) return DeviceFieldType(name);
    if (target.is(K::kDyn)) return Type::Of(K::kDyn);
    if (target.is(K::kMap) && (target.params[0].is(K::kString) || target.params[0].is(K::kDyn))) {
      return target.params[1];
    }
    return Type::Of(K::kNull);
  }

  absl::StatusOr<Type> CallType(Expr& e, const std::string& name, bool member) {
    if (member && e.args[0]->kind == Expr::Kind::kIdent && !InScope(e.args[0]->name)) {
      static constexpr std::string_view kNamespaces[] = {"strings", "sets", "math", "lists", "base64", "optional"};
      const std::string& ns = e.args[0]->name;
      if (std::find(std::begin(kNamespaces), std::end(kNamespaces), ns) != std::end(kNamespaces)) {
        // strings.quote(), sets.contains(), math.greatest(), ...: namespaced functions upstream.
        return Fail(e, StrCat("unsupported function '", ns, ".", name, "'"));
      }
    }
    std::vector<Type> args;
    for (auto& a : e.args) {
      absl::StatusOr<Type> t = Visit(*a);
      if (!t.ok()) return t;
      args.push_back(std::move(*t));
    }
    int fn = FindFunction(name, member);
    if (fn < 0) {
      if (IsKnownUnsupported(name)) {
        return Fail(e, StrCat("unsupported function '", name, "'", member ? " (as a method)" : ""));
      }
      return Fail(e, StrCat("undeclared reference to '", name, "'"));
    }
    std::optional<Type> result;
    int matched = 0;
    const std::vector<Overload>& overloads = FunctionOverloads(fn);
    for (size_t k = 0; k < overloads.size(); ++k) {
      const Overload& o = overloads[k];
      if (o.params.size() != args.size()) continue;
      Bindings b;
      bool fits = true;
      for (size_t i = 0; i < args.size() && fits; ++i) fits = Unify(o.params[i], args[i], b);
      if (!fits) continue;
      Type r = Substitute(o.result, b);
      e.overload = ++matched == 1 ? static_cast<int>(k) : -1;
      if (!result) {
        result = r;
      } else if (!result->is(K::kDyn) && !(*result == r)) {
        result = Type::Of(K::kDyn);
      }
      // An argument whose type is still free (`[]`) is bound by the first overload that fits,
      // which then excludes the others (cel-go: [].sum() is an int).
      if (std::any_of(args.begin(), args.end(), HasFree)) break;
    }
    if (!result) {
      std::string list;
      for (size_t i = 0; i < args.size(); ++i) list += StrCat(i ? ", " : "", args[i].Name());
      return Fail(e, StrCat("found no matching overload for '", name, "' applied to '(", list, ")'"));
    }
    e.function = fn;
    if (name == "@in" && e.args[1]->kind == Expr::Kind::kList && IsConstant(*e.args[1])) {
      e.set_membership = true;
      for (const auto& elem : e.args[1]->args) {
        if (elem->kind != Expr::Kind::kLiteral || elem->literal.get<NullValue>() != nullptr ||
            elem->literal.get<std::shared_ptr<const ValueList>>() != nullptr) {
          e.set_membership = false;
        }
      }
    }
    if (name == "@in" && e.args[1]->kind == Expr::Kind::kList && e.args[1]->args.empty()) {
      // The planner turns `x in []` into false without evaluating x.
      e.kind = Expr::Kind::kLiteral;
      e.literal = Value{false};
      e.args.clear();
      return *result;
    }
    if (name == "matches") {
      const Expr& pattern = *e.args[1];
      if (const std::string* p = pattern.literal.get<std::string>(); pattern.kind == Expr::Kind::kLiteral && p) {
        auto re = std::make_unique<re2::RE2>(*p, re2::RE2::Quiet);
        if (!re->ok()) return Fail(pattern, StrCat("invalid regular expression: ", re->error()));
        program_.regexes[&e] = std::move(re);
      }
    }
    if (e.kind == Expr::Kind::kCall && !e.set_membership) {
      if (absl::Status st = FoldConstantCall(e); !st.ok()) return st;
      if (e.kind == Expr::Kind::kLiteral) program_.regexes.erase(&e);  // folded: the pattern is done
    }
    return *result;
  }

  // cel-go's program planner (OptOptimize) evaluates a type conversion of a constant once, when
  // the program is built: a conversion that fails there is a compile error, not a run-time one.
  // Tessel folds every successful call on constants the same way (below).
  // A constant as cel-go's planner sees one (`any`: also what Tessel folded on its own).
  static bool IsConstant(const Expr& e, bool any = false) {
    if (e.kind == Expr::Kind::kLiteral) return any || !e.folded;
    if (e.kind != Expr::Kind::kList) return false;
    for (const auto& a : e.args) {
      if (!IsConstant(*a, any)) return false;
    }
    return true;
  }
  static Value ConstantValue(const Expr& e) {
    if (e.kind == Expr::Kind::kLiteral) return e.literal;
    auto list = std::make_shared<ValueList>();
    for (const auto& a : e.args) list->push_back(ConstantValue(*a));
    return Value{std::shared_ptr<const ValueList>(std::move(list))};
  }
  absl::Status FoldConstantCall(Expr& e) {
    static constexpr std::string_view kConversions[] = {"int", "uint", "double", "string", "bool", "dyn"};
    if (!std::all_of(e.args.begin(), e.args.end(), [](const auto& a) { return IsConstant(*a, true); })) {
      return absl::OkStatus();
    }
    std::vector<Value> args;
    for (const auto& a : e.args) args.push_back(ConstantValue(*a));
    CallSite site{.regex = nullptr, .overload = e.overload};
    if (auto it = program_.regexes.find(&e); it != program_.regexes.end()) site.regex = it->second.get();
    Value v = CallFunction(e.function, args, site);
    bool upstream = !e.member && e.args.size() == 1 && IsConstant(*e.args[0]) &&
        std::find(std::begin(kConversions), std::end(kConversions), e.name) != std::end(kConversions);
    if (const ErrorValue* err = v.get<ErrorValue>()) {
      if (!upstream) return absl::OkStatus();  // other calls fail at run time, as upstream
      return Fail(e, StrCat("program instantiation failed: ", err->message));
    }
    e.folded = !upstream;
    // Any other call on constants is computed once too (quantity('40Gi'), semver('1.2.3')): its
    // result cannot change, and the evaluator then reads a literal per device.
    e.kind = Expr::Kind::kLiteral;
    e.literal = std::move(v);
    e.args.clear();
    return absl::OkStatus();
  }

  absl::StatusOr<Type> ComprehensionType(Expr& e) {
    absl::StatusOr<Type> range = Visit(*e.args[0]);
    if (!range.ok()) return range;
    Type var;
    if (range->is(K::kList)) {
      var = range->params[0];
    } else if (range->is(K::kMap)) {
      var = range->params[0];
    } else if (range->is(K::kDyn)) {
      var = Type::Of(K::kDyn);
    } else {
      return Fail(*e.args[0], StrCat("expression of type '", range->Name(), "' cannot be range of a comprehension"));
    }
    e.slot = Push(e.name, var);
    std::vector<Type> ts;
    for (size_t i = 1; i < e.args.size(); ++i) {
      absl::StatusOr<Type> t = Visit(*e.args[i]);
      if (!t.ok()) return t;
      ts.push_back(std::move(*t));
    }
    scope_.pop_back();
    bool predicate_first = e.macro != Expr::Macro::kMap;
    if (predicate_first && !BoolOrDyn(ts[0])) {
      return Fail(*e.args[1], StrCat("the predicate must be bool, not '", ts[0].Name(), "'"));
    }
    switch (e.macro) {
      case Expr::Macro::kMap: return Type::List(ts[0]);
      case Expr::Macro::kMapFilter: return Type::List(ts[1]);
      case Expr::Macro::kFilter: return Type::List(var);
      default: return Type::Of(K::kBool);
    }
  }

  struct Local {
    std::string name;
    Type type;
    int slot;
  };
  std::string_view src_;
  Program& program_;
  std::vector<Local> scope_;
};

class Evaluator {
 public:
  Evaluator(const Program& program, const DeviceView& device)
      : program_(program), device_(device), slots_(program.slots) {}

  Value Eval(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::kLiteral: return e.literal;
      case Expr::Kind::kIdent:
        return e.slot >= 0 ? slots_[e.slot] : Value{DeviceRef{&device_}};
      case Expr::Kind::kSelect: {
        Value t = Eval(*e.args[0]);
        return t.is_error() ? t : SelectField(t, e.name);
      }
      case Expr::Kind::kPresence: {
        Value t = Eval(*e.args[0]);
        return t.is_error() ? t : HasField(t, e.name);
      }
      case Expr::Kind::kIndex:
      case Expr::Kind::kCall: {
        if (!Charge()) return Error(*panic_);
        Value args[4];
        size_t n = e.args.size();
        std::vector<Value> many;
        Value* a = args;
        if (n > 4) {
          many.resize(n);
          a = many.data();
        }
        for (size_t i = 0; i < n; ++i) {
          a[i] = Eval(*e.args[i]);
          if (a[i].is_error()) return a[i];
        }
        if (e.kind == Expr::Kind::kIndex) return Index(a[0], a[1]);
        if (e.set_membership && (a[0].get<std::shared_ptr<const SemanticVersion>>() ||
                                 a[0].get<std::shared_ptr<const ValueList>>())) {
          // A Go panic in the reference: it ends the whole evaluation, whatever && or || around it.
          panic_ = StrCat("internal error: hash of unhashable type ", a[0].TypeName());
          return Error(*panic_);
        }
        CallSite site{.regex = nullptr, .overload = e.overload};
        if (auto it = program_.regexes.find(&e); it != program_.regexes.end()) site.regex = it->second.get();
        return CallFunction(e.function, std::span<const Value>(a, n), site);
      }
      case Expr::Kind::kList: {
        auto list = std::make_shared<ValueList>();
        list->reserve(e.args.size());
        for (const auto& a : e.args) {
          Value v = Eval(*a);
          if (v.is_error()) return v;
          list->push_back(std::move(v));
        }
        return Value{std::shared_ptr<const ValueList>(std::move(list))};
      }
      case Expr::Kind::kAnd:
      case Expr::Kind::kOr: return Logic(e.kind == Expr::Kind::kAnd, Eval(*e.args[0]), *e.args[1]);
      case Expr::Kind::kConditional: {
        Value c = Eval(*e.args[0]);
        if (c.is_error()) return c;
        const bool* b = c.get<bool>();
        if (!b) return NoSuchOverload("_?_:_");
        return Eval(*e.args[*b ? 1 : 2]);
      }
      case Expr::Kind::kBind: {
        slots_[e.slot] = Eval(*e.args[0]);
        return Eval(*e.args[1]);
      }
      case Expr::Kind::kComprehension: return Comprehension(e);
    }
    return Error("unsupported expression");
  }

 private:
  // a && b / a || b: the decisive value (false / true) wins over an error on either side.
  Value Logic(bool is_and, Value lhs, const Expr& rhs_expr) {
    const bool* l = lhs.get<bool>();
    if (l && *l != is_and) return lhs;
    Value rhs = Eval(rhs_expr);
    return Combine(is_and, lhs, rhs);
  }
  static Value Combine(bool is_and, const Value& lhs, const Value& rhs) {
    const bool* l = lhs.get<bool>();
    const bool* r = rhs.get<bool>();
    if (l && *l != is_and) return lhs;
    if (r && *r != is_and) return rhs;
    if (!l) return lhs.is_error() ? lhs : NoSuchOverload(is_and ? "_&&_" : "_||_");
    if (!r) return rhs.is_error() ? rhs : NoSuchOverload(is_and ? "_&&_" : "_||_");
    return Value{is_and};
  }

  Value Comprehension(const Expr& e) {
    Value range = Eval(*e.args[0]);
    if (range.is_error()) return range;
    Value items = IterationRange(range);
    if (items.is_error()) return items;
    const ValueList& list = **items.get<std::shared_ptr<const ValueList>>();
    const int slot = e.slot;
    switch (e.macro) {
      case Expr::Macro::kAll:
      case Expr::Macro::kExists: {
        bool is_and = e.macro == Expr::Macro::kAll;
        Value acc{is_and};
        for (const Value& item : list) {
          if (const bool* b = acc.get<bool>(); b && *b != is_and) break;
          if (!Charge()) return Error(*panic_);
          slots_[slot] = item;
          acc = Combine(is_and, acc, Eval(*e.args[1]));
        }
        return acc;
      }
      case Expr::Macro::kExistsOne: {
        int64_t count = 0;
        for (const Value& item : list) {
          if (!Charge()) return Error(*panic_);
          slots_[slot] = item;
          Value p = Eval(*e.args[1]);
          if (p.is_error()) return p;
          const bool* b = p.get<bool>();
          if (!b) return NoSuchOverload("_?_:_");
          count += *b ? 1 : 0;
        }
        return Value{count == 1};
      }
      case Expr::Macro::kMap:
      case Expr::Macro::kMapFilter:
      case Expr::Macro::kFilter: {
        auto out = std::make_shared<ValueList>();
        for (const Value& item : list) {
          if (!Charge()) return Error(*panic_);
          slots_[slot] = item;
          if (e.macro != Expr::Macro::kMap) {
            Value p = Eval(*e.args[1]);
            if (p.is_error()) return p;
            const bool* b = p.get<bool>();
            if (!b) return NoSuchOverload("_?_:_");
            if (!*b) continue;
          }
          if (e.macro == Expr::Macro::kFilter) {
            out->push_back(item);
            continue;
          }
          Value v = Eval(*e.args[e.macro == Expr::Macro::kMap ? 1 : 2]);
          if (v.is_error()) return v;
          out->push_back(std::move(v));
        }
        return Value{std::shared_ptr<const ValueList>(std::move(out))};
      }
      case Expr::Macro::kNone: break;
    }
    return Error("unsupported comprehension");
  }

  // The reference stops an evaluation whose runtime cost passes the DRA limit
  // (CELSelectorExpressionMaxCost, 1,000,000). Tessel counts one per call and per comprehension
  // step, a lower bound of cel-go's cost, so whatever stops here stops there too; it also bounds
  // the work a tenant's selector can make the scheduling thread do.
  static constexpr int64_t kCostLimit = 1'000'000;
  bool Charge() {
    if (++cost_ <= kCostLimit) return true;
    if (!panic_) panic_ = "operation cancelled: actual cost limit exceeded";
    return false;
  }

  const Program& program_;
  const DeviceView& device_;
  std::vector<Value> slots_;
  int64_t cost_ = 0;

 public:
  std::optional<std::string> panic_;
};

// The reference converts every attribute before it evaluates: an unparsable version attribute
// fails the device whatever the expression reads.
absl::Status CheckDeviceVersions(const DeviceView& device) {
  if (device.attributes == nullptr) return absl::OkStatus();
  for (const auto& [domain, names] : *device.attributes) {
    for (const auto& [name, value] : names) {
      if (const SemVer* v = std::get_if<SemVer>(&value); v && !SemanticVersion::Parse(v->text)) {
        return absl::InvalidArgumentError(
            StrCat("attribute ", domain, "/", name, ": parse semantic version: \"", v->text, "\" is not a semantic version"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Selector> Selector::Compile(std::string_view expression) {
  absl::StatusOr<std::unique_ptr<Expr>> root = Parse(expression);
  if (!root.ok()) return root.status();
  auto program = std::make_shared<Program>();
  program->root = std::move(*root);
  absl::StatusOr<Type> type = Checker(expression, *program).Check(*program->root);
  if (!type.ok()) return type.status();
  if (!BoolOrDyn(*type)) {
    return absl::InvalidArgumentError(StrCat(Position(expression, program->root->position),
                                             ": must evaluate to bool or the unknown type, not ", type->Name()));
  }
  Selector s;
  s.expression_ = std::string(expression);
  s.program_ = std::move(program);
  return s;
}

absl::StatusOr<bool> Selector::Matches(const DeviceView& device) const {
  if (program_ == nullptr) return absl::FailedPreconditionError("CEL selector used before it was compiled");
  if (absl::Status st = CheckDeviceVersions(device); !st.ok()) return st;
  Evaluator evaluator(*program_, device);
  Value v = evaluator.Eval(*program_->root);
  if (evaluator.panic_) return absl::InvalidArgumentError(*evaluator.panic_);
  if (const ErrorValue* err = v.get<ErrorValue>()) return absl::InvalidArgumentError(err->message);
  const bool* b = v.get<bool>();
  if (b == nullptr) {
    return absl::InvalidArgumentError(StrCat("CEL result of type ", v.TypeName(), " could not be converted to bool"));
  }
  return *b;
}

}  // namespace tessel::dra::cel
