// The tree-walking renderer: statements write to the output, expressions evaluate to values.
#include "tokenize/jinja/render.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "dew/error.h"
#include "tokenize/jinja/builtins.h"
#include "tokenize/jinja/limits.h"

namespace dew::jinja {

namespace {

// Macro calls nested deeper than this are refused (a template recursing without end).
constexpr int kMaxCallDepth = 64;

using Frame = std::unordered_map<std::string, Value>;

Value undefined_name(const std::string& name) {
  return Undefined{"'" + name + "'"};
}

int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

[[noreturn]] void unsupported(const char* op, const Value& a, const Value& b) {
  fail("unsupported operand types for {}: {} and {}", op, a.type_name(), b.type_name());
}

void require_defined(const Value& value) {
  if (value.is_undefined()) fail("{} is undefined", value.as_undefined().description);
}

// Integer arithmetic as Python's, within int64: past it (Python would grow the integer) an error,
// never a wrapped value.
int64_t checked(int64_t x, int64_t y, char op) {
  int64_t r = 0;
  const bool overflowed = op == '+'   ? __builtin_add_overflow(x, y, &r)
                          : op == '-' ? __builtin_sub_overflow(x, y, &r)
                                      : __builtin_mul_overflow(x, y, &r);
  if (overflowed) fail("integer overflow in {}: the result is past 64 bits", op);
  return r;
}

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") {
    const std::string x = to_text(a), y = to_text(b);
    check_text_size(x.size() + y.size(), "a string joined by ~");
    return x + y;
  }
  require_defined(a);
  require_defined(b);
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      check_text_size(a.as_string().size() + b.as_string().size(), "a string joined by +");
      return a.as_string() + b.as_string();
    }
    if (a.is_list() && b.is_list()) {
      check_list_size(a.as_list().size() + b.as_list().size(), "a list joined by +");
      ValueList joined = a.as_list();
      joined.insert(joined.end(), b.as_list().begin(), b.as_list().end());
      return joined;
    }
  }
  if (op == "*") {
    const auto repeat = [&](const Value& sequence, int64_t times) -> Value {
      times = std::max<int64_t>(times, 0);  // Python: a sequence times a negative number is empty
      const size_t length = sequence.is_string() ? sequence.as_string().size() : sequence.as_list().size();
      const size_t total =
          length == 0 ? 0 : (size_t(times) > kMaxTextBytes ? kMaxTextBytes + 1 : length * size_t(times));
      if (sequence.is_string())
        check_text_size(total, "a string repeated by *");
      else
        check_list_size(total, "a list repeated by *");
      if (sequence.is_string()) {
        std::string out;
        for (int64_t i = 0; i < times; ++i) out += sequence.as_string();
        return out;
      }
      ValueList out;
      for (int64_t i = 0; i < times; ++i)
        out.insert(out.end(), sequence.as_list().begin(), sequence.as_list().end());
      return out;
    };
    if ((a.is_string() || a.is_list()) && b.is_number() && !b.is_float()) return repeat(a, b.as_int());
    if ((b.is_string() || b.is_list()) && a.is_number() && !a.is_float()) return repeat(b, a.as_int());
  }
  if (!a.is_number() || !b.is_number()) unsupported(op.c_str(), a, b);
  const bool floating = a.is_float() || b.is_float();
  if (op == "/") {
    if (b.as_number() == 0) fail("division by zero");
    return a.as_number() / b.as_number();
  }
  if (op == "**") {
    if (!floating && b.as_int() >= 0) {  // by squaring: the exponent's bits, not its value, in steps
      int64_t result = 1, base = a.as_int();
      for (int64_t e = b.as_int(); e > 0; e >>= 1) {
        if (e & 1) result = checked(result, base, '*');
        if (e > 1) base = checked(base, base, '*');
      }
      return result;
    }
    return std::pow(a.as_number(), b.as_number());
  }
  if (floating) {
    const double x = a.as_number(), y = b.as_number();
    if (op == "+") return x + y;
    if (op == "-") return x - y;
    if (op == "*") return x * y;
    if (y == 0) fail("division by zero");
    if (op == "//") return std::floor(x / y);
    const double r = std::fmod(x, y);  // Python's %: the sign of the divisor
    return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
  }
  const int64_t x = a.as_int(), y = b.as_int();
  if (op == "+" || op == "-" || op == "*") return checked(x, y, op[0]);
  if (y == 0) fail("division by zero");
  if (op == "//") return floor_div(x, y);
  return x - floor_div(x, y) * y;
}

bool compare(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return equal(a, b);
  if (op == "!=") return !equal(a, b);
  if (op == "in") return contains(b, a);
  if (op == "not in") return !contains(b, a);
  if (op == "<") return less(a, b);
  if (op == ">") return less(b, a);
  if (op == "<=") return !less(b, a);
  return !less(a, b);  // >=
}

// Python's slice of a list or string: clamped bounds, negative indices from the end, any step but 0.
Value slice(const Value& object, const Value& start, const Value& stop, const Value& step) {
  require_defined(object);
  const auto integer = [](const Value& v, const char* what) -> std::optional<int64_t> {
    if (v.is_undefined() || v.is_none()) return std::nullopt;
    if (!v.is_number() || v.is_float())
      fail("a slice's {} must be an integer, not a {}", what, v.type_name());
    return v.as_int();
  };
  const int64_t by = integer(step, "step").value_or(1);
  if (by == 0) fail("a slice's step cannot be zero");
  const ValueList items = object.is_string() ? iterate(object)
                          : object.is_list() ? object.as_list()
                                             : ValueList{};
  if (!object.is_string() && !object.is_list())
    fail("a {} cannot be sliced (a list or string can)", object.type_name());
  const int64_t n = int64_t(items.size());
  const auto clamp = [&](std::optional<int64_t> index, int64_t fallback) {
    if (!index) return fallback;
    int64_t i = *index < 0 ? *index + n : *index;
    return by > 0 ? std::clamp<int64_t>(i, 0, n) : std::clamp<int64_t>(i, -1, n - 1);
  };
  const int64_t from = clamp(integer(start, "start"), by > 0 ? 0 : n - 1);
  const int64_t to = clamp(integer(stop, "stop"), by > 0 ? n : -1);
  ValueList out;
  for (int64_t i = from; by > 0 ? i < to : i > to; i += by) out.push_back(items[size_t(i)]);
  if (!object.is_string()) return out;
  std::string text;
  for (const Value& c : out) text += c.as_string();
  return text;
}

enum class Flow { normal, loop_break, loop_continue };

class Renderer {
 public:
  Renderer(const Template& parsed, const ValueDict& variables) : template_(parsed) {
    frames_.emplace_back();
    for (auto& [name, value] : builtin_globals().entries) frames_.back()[name] = value;
    for (const auto& [name, value] : variables.entries) frames_.back()[name] = value;
    frames_.emplace_back();  // the template's own top-level set
  }

  RenderResult run() {
    output_ = &result_.text;
    try {
      execute(template_.body);
    } catch (const TemplateRaised& raised) {
      fail("[chat_template] {} line {}: the template raised an error: {}", template_.source, line_,
           raised.message);
    } catch (const Error& error) {
      const std::string message = error.what();
      if (message.rfind("[chat_template]", 0) == 0) throw;
      fail("[chat_template] {} line {}: {}", template_.source, line_, message);
    }
    return std::move(result_);
  }

 private:
  Value lookup(const std::string& name) const {
    for (auto frame = frames_.rbegin(); frame != frames_.rend(); ++frame)
      if (auto it = frame->find(name); it != frame->end()) return it->second;
    return undefined_name(name);
  }

  // ---- statements ----

  // The output, or a block's captured text, within the sandbox's size.
  void write(const std::string& text) {
    check_text_size(output_->size() + text.size(), "the template's output");
    *output_ += text;
  }

  // One statement or expression more; a render past kMaxSteps is a template that does not end.
  void step() {
    if (++steps_ > kMaxSteps)
      fail("the template ran past {} steps; the sandbox stops it there (a loop without end?)", kMaxSteps);
  }

  Flow execute(const Body& body) {
    for (const Node& node : body) {
      step();
      line_ = node.line;
      switch (node.kind) {
        case Node::Kind::text:
          write(node.text);
          break;
        case Node::Kind::print:
          write(to_text(evaluate(*node.expr)));
          break;
        case Node::Kind::if_block: {
          const Body* chosen = &node.else_body;
          for (const auto& [condition, branch] : node.branches)
            if (truthy(evaluate(*condition))) {
              chosen = &branch;
              break;
            }
          if (Flow flow = execute(*chosen); flow != Flow::normal) return flow;
          break;
        }
        case Node::Kind::for_block:
          run_for(node);
          break;
        case Node::Kind::set:
          assign(*node.target, evaluate(*node.expr));
          break;
        case Node::Kind::set_block: {
          Value captured = capture(node.body);
          if (node.expr) captured = apply_chain(*node.expr, captured);
          assign(*node.target, captured);
          break;
        }
        case Node::Kind::filter_block:
          write(to_text(apply_chain(*node.expr, capture(node.body))));
          break;
        case Node::Kind::macro:
          frames_.back()[node.text] = make_macro(node);
          break;
        case Node::Kind::generation: {
          const bool recorded = output_ == &result_.text;
          const size_t begin = output_->size();
          if (Flow flow = execute(node.body); flow != Flow::normal) return flow;
          if (recorded) result_.generation_spans.emplace_back(begin, output_->size());
          break;
        }
        case Node::Kind::loop_break:
          return Flow::loop_break;
        case Node::Kind::loop_continue:
          return Flow::loop_continue;
      }
    }
    return Flow::normal;
  }

  std::string capture(const Body& body) {
    std::string text;
    std::string* saved = std::exchange(output_, &text);
    execute(body);
    output_ = saved;
    return text;
  }

  // A filter chain of a set or filter block, applied to the block's text.
  Value apply_chain(const Expr& chain, const Value& operand) {
    const Value inner = chain.children[0] ? apply_chain(*chain.children[0], operand) : operand;
    Arguments arguments = evaluate_arguments(chain);
    return apply_filter(chain.name, inner, arguments);
  }

  void assign(const Expr& target, const Value& value) {
    if (target.kind == Expr::Kind::name) {
      frames_.back()[target.name] = value;
    } else if (target.kind == Expr::Kind::attribute) {
      const Value object = lookup(target.children[0]->name);
      if (!object.is_namespace())
        fail("cannot set the attribute '{}' of a {} ('{}' must be a namespace())", target.name,
             object.type_name(), target.children[0]->name);
      object.as_namespace().attributes.set(target.name, value);
    } else {
      const ValueList items = iterate(value);
      if (items.size() != target.children.size())
        fail("cannot unpack {} values into {} names", items.size(), target.children.size());
      for (size_t i = 0; i < items.size(); ++i) frames_.back()[target.children[i]->name] = items[i];
    }
  }

  void run_for(const Node& node) {
    ValueList items;
    for (Value& item : iterate(evaluate(*node.expr))) {
      if (node.condition) {  // the filter sees the loop variable, in a frame of its own
        frames_.emplace_back();
        assign(*node.target, item);
        const bool keep = truthy(evaluate(*node.condition));
        frames_.pop_back();
        if (!keep) continue;
      }
      items.push_back(std::move(item));
    }
    if (items.empty()) {
      execute(node.else_body);
      return;
    }
    const int64_t n = int64_t(items.size());
    for (int64_t i = 0; i < n; ++i) {
      step();  // an iteration is a step even when its body is empty
      ValueDict loop;
      loop.set("index", i + 1);
      loop.set("index0", i);
      loop.set("revindex", n - i);
      loop.set("revindex0", n - i - 1);
      loop.set("first", i == 0);
      loop.set("last", i == n - 1);
      loop.set("length", n);
      loop.set("depth", int64_t(1));
      loop.set("depth0", int64_t(0));
      loop.set("previtem", i > 0 ? items[size_t(i - 1)] : Value(Undefined{"'loop.previtem'"}));
      loop.set("nextitem", i + 1 < n ? items[size_t(i + 1)] : Value(Undefined{"'loop.nextitem'"}));
      loop.set("cycle", Callable{"loop.cycle", [i](Arguments& arguments) -> Value {
                                   if (arguments.positional.empty())
                                     fail("loop.cycle needs at least one value");
                                   return arguments.positional[size_t(i) % arguments.positional.size()];
                                 }});
      frames_.emplace_back();  // each iteration starts from the enclosing scope again
      frames_.back()["loop"] = Value(std::move(loop));
      assign(*node.target, items[size_t(i)]);
      const Flow flow = execute(node.body);
      frames_.pop_back();
      if (flow == Flow::loop_break) break;
    }
  }

  Value make_macro(const Node& node) {
    const size_t depth = frames_.size();
    return Callable{
        node.text, [this, &node, depth](Arguments& arguments) { return call_macro(node, depth, arguments); }};
  }

  // A macro runs in the scope it was defined in (the frames below `depth`, as they are now) plus its
  // parameters; arguments it has no parameter for go to `varargs` and `kwargs`.
  Value call_macro(const Node& node, size_t depth, const Arguments& arguments) {
    if (calls_ >= kMaxCallDepth) fail("macro '{}' called more than {} levels deep", node.text, kMaxCallDepth);
    Frame frame;
    ValueList extra;
    for (size_t i = 0; i < arguments.positional.size(); ++i) {
      if (i < node.parameters.size())
        frame[node.parameters[i].first] = arguments.positional[i];
      else
        extra.push_back(arguments.positional[i]);
    }
    ValueDict extra_named;
    for (const auto& argument : arguments.named) {
      const bool known =
          std::any_of(node.parameters.begin(), node.parameters.end(),
                      [&](const auto& parameter) { return parameter.first == argument.first; });
      if (known)
        frame[argument.first] = argument.second;
      else
        extra_named.set(argument.first, argument.second);
    }
    std::vector<Frame> caller(frames_.begin(), frames_.begin() + std::ptrdiff_t(depth));
    std::swap(caller, frames_);
    frames_.push_back(std::move(frame));
    for (const auto& [name, fallback] : node.parameters)  // defaults see the parameters bound so far
      if (!frames_.back().count(name))
        frames_.back()[name] = fallback ? evaluate(*fallback) : undefined_name(name);
    frames_.back()["varargs"] = Value::tuple(std::move(extra));
    frames_.back()["kwargs"] = Value(std::move(extra_named));
    ++calls_;
    const int line = line_;
    // An error inside ends the whole render (with this line_), so nothing needs restoring on that path.
    std::string text = capture(node.body);
    --calls_;
    std::swap(caller, frames_);
    line_ = line;
    return text;
  }

  // ---- expressions ----

  Arguments evaluate_arguments(const Expr& call) {
    Arguments arguments;
    for (size_t i = 1; i < call.children.size(); ++i)
      arguments.positional.push_back(evaluate(*call.children[i]));
    for (const auto& [name, expr] : call.named) arguments.named.emplace_back(name, evaluate(*expr));
    return arguments;
  }

  Value evaluate(const Expr& expr) {
    step();
    line_ = expr.line;
    switch (expr.kind) {
      case Expr::Kind::literal:
        return expr.value;
      case Expr::Kind::name:
        return lookup(expr.name);
      case Expr::Kind::attribute:
        return attribute_of(evaluate(*expr.children[0]), expr.name);
      case Expr::Kind::item: {
        const Value object = evaluate(*expr.children[0]);
        return item_of(object, evaluate(*expr.children[1]));
      }
      case Expr::Kind::slice: {
        const Value object = evaluate(*expr.children[0]);
        Value parts[3];
        for (int i = 0; i < 3; ++i)
          if (expr.children[size_t(i) + 1]) parts[i] = evaluate(*expr.children[size_t(i) + 1]);
        return slice(object, parts[0], parts[1], parts[2]);
      }
      case Expr::Kind::call: {
        const Value callee = evaluate(*expr.children[0]);
        require_defined(callee);
        if (!callee.is_callable()) fail("a {} is not callable", callee.type_name());
        Arguments arguments = evaluate_arguments(expr);
        return callee.as_callable().call(arguments);
      }
      case Expr::Kind::filter: {
        const Value operand = evaluate(*expr.children[0]);
        Arguments arguments = evaluate_arguments(expr);
        return apply_filter(expr.name, operand, arguments);
      }
      case Expr::Kind::test: {
        const Value operand = evaluate(*expr.children[0]);
        Arguments arguments = evaluate_arguments(expr);
        return apply_test(expr.name, operand, arguments) != expr.negated;
      }
      case Expr::Kind::logical_not:
        return !truthy(evaluate(*expr.children[0]));
      case Expr::Kind::negate: {
        const Value operand = evaluate(*expr.children[0]);
        require_defined(operand);
        if (operand.is_float()) return -operand.as_number();
        if (operand.is_number()) return -operand.as_int();
        fail("bad operand type for unary -: {}", operand.type_name());
      }
      case Expr::Kind::binary: {
        const Value left = evaluate(*expr.children[0]);
        return arithmetic(expr.name, left, evaluate(*expr.children[1]));
      }
      case Expr::Kind::compare: {
        Value left = evaluate(*expr.children[0]);
        for (size_t i = 0; i < expr.ops.size(); ++i) {
          Value right = evaluate(*expr.children[i + 1]);
          if (!compare(expr.ops[i], left, right)) return false;
          left = std::move(right);
        }
        return true;
      }
      case Expr::Kind::logical_and: {
        Value left = evaluate(*expr.children[0]);
        return truthy(left) ? evaluate(*expr.children[1]) : left;
      }
      case Expr::Kind::logical_or: {
        Value left = evaluate(*expr.children[0]);
        return truthy(left) ? left : evaluate(*expr.children[1]);
      }
      case Expr::Kind::conditional:
        if (truthy(evaluate(*expr.children[1]))) return evaluate(*expr.children[0]);
        if (expr.children[2]) return evaluate(*expr.children[2]);
        return Undefined{"the inline if-expression's value (its condition was false and it has no else)"};
      case Expr::Kind::list:
      case Expr::Kind::tuple: {
        ValueList items;
        for (const auto& child : expr.children) items.push_back(evaluate(*child));
        return expr.kind == Expr::Kind::tuple ? Value::tuple(std::move(items)) : Value(std::move(items));
      }
      case Expr::Kind::dict: {
        ValueDict dict;
        for (size_t i = 0; i < expr.children.size(); i += 2) {
          const Value key = evaluate(*expr.children[i]);
          if (!key.is_string()) fail("a dict literal's keys must be strings here, not a {}", key.type_name());
          dict.set(key.as_string(), evaluate(*expr.children[i + 1]));
        }
        return dict;
      }
    }
    fail("unknown expression");
  }

  const Template& template_;
  std::vector<Frame> frames_;
  RenderResult result_;
  std::string* output_ = nullptr;
  int line_ = 1;
  int64_t steps_ = 0;  // statements and expressions evaluated (kMaxSteps)
  int calls_ = 0;
};

}  // namespace

RenderResult render_template(const Template& parsed, const ValueDict& variables) {
  return Renderer(parsed, variables).run();
}

}  // namespace dew::jinja
