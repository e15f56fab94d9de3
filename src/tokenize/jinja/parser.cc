// Recursive descent over the lexer's tokens, one function per precedence level of Jinja2's parser:
// conditional < or < and < not < comparison < + - < ~ < * / // % < ** < unary - < filters, tests,
// calls, attributes and subscripts.
#include "tokenize/jinja/parser.h"

#include <cstdlib>

#include <charconv>
#include <set>

#include "dew/error.h"
#include "tokenize/jinja/lexer.h"

namespace dew::jinja {

namespace {

// Deeper nesting than this is refused: no chat template comes near it, and it bounds the recursion.
constexpr int kMaxNesting = 200;

class Parser {
 public:
  Parser(std::vector<Token> tokens, const std::string& source)
      : tokens_(std::move(tokens)), source_(source) {}

  Body parse_all() {
    auto [body, end] = parse_body({});
    if (!end.empty()) error(fmt::format("'{}' has no block to close", end));
    return std::move(body);
  }

 private:
  const Token& current() const { return tokens_[pos_]; }
  const Token& peek(size_t ahead = 1) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
  bool at_op(std::string_view op) const { return current().kind == TokenKind::op && current().text == op; }
  bool at_name(std::string_view name) const {
    return current().kind == TokenKind::name && current().text == name;
  }
  Token take() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }

  [[noreturn]] void error(const std::string& what) const {
    fail("[chat_template] {} line {}: {}", source_, current().line, what);
  }

  std::string describe(const Token& token) const {
    switch (token.kind) {
      case TokenKind::end:
        return "the end of the template";
      case TokenKind::text:
        return "text";
      case TokenKind::variable_begin:
        return "'{{'";
      case TokenKind::variable_end:
        return "'}}'";
      case TokenKind::block_begin:
        return "'{%'";
      case TokenKind::block_end:
        return "'%}'";
      case TokenKind::string:
        return "a string";
      default:
        return "'" + token.text + "'";
    }
  }

  void expect_op(std::string_view op) {
    if (!at_op(op)) error(fmt::format("expected '{}', found {}", op, describe(current())));
    take();
  }
  void expect(TokenKind kind, const char* what) {
    if (current().kind != kind) error(fmt::format("expected {}, found {}", what, describe(current())));
    take();
  }
  std::string expect_name(const char* what) {
    if (current().kind != TokenKind::name)
      error(fmt::format("expected {}, found {}", what, describe(current())));
    return take().text;
  }
  void end_tag() { expect(TokenKind::block_end, "'%}'"); }

  ExprPtr node(Expr::Kind kind, int line) {
    auto expr = std::make_unique<Expr>();
    expr->kind = kind;
    expr->line = line;
    return expr;
  }

  struct Nesting {
    explicit Nesting(Parser& parser) : parser_(parser) {
      if (++parser_.nesting_ > kMaxNesting)
        parser_.error(fmt::format("nested deeper than {} levels", kMaxNesting));
    }
    ~Nesting() { --parser_.nesting_; }
    Parser& parser_;
  };

  // ---- statements ----

  // Nodes up to a block tag named in `ends` (consumed up to and including its name), or to the end
  // of the template; returns the body and the name of the closing tag ("" at the end).
  std::pair<Body, std::string> parse_body(const std::set<std::string>& ends) {
    Nesting nesting(*this);
    Body body;
    for (;;) {
      const Token& token = current();
      if (token.kind == TokenKind::end) return {std::move(body), ""};
      if (token.kind == TokenKind::text) {
        Node text{Node::Kind::text, token.line};
        text.text = take().text;
        body.push_back(std::move(text));
      } else if (token.kind == TokenKind::variable_begin) {
        Node print{Node::Kind::print, take().line};
        print.expr = parse_tuple(true);
        expect(TokenKind::variable_end, "'}}'");
        body.push_back(std::move(print));
      } else {
        take();
        if (current().kind == TokenKind::name && ends.count(current().text))
          return {std::move(body), take().text};
        body.push_back(parse_statement());
      }
    }
  }

  Body parse_block_until(const std::string& end, const std::string& opened) {
    const int line = current().line;
    auto [body, found] = parse_body({end});
    if (found.empty())
      fail("[chat_template] {} line {}: '{}' is never closed with {{% {} %}}", source_, line, opened, end);
    end_tag();
    return std::move(body);
  }

  Node parse_statement() {
    const int line = current().line;
    const std::string tag = expect_name("a statement name after '{%'");
    if (tag == "if") return parse_if(line);
    if (tag == "for") return parse_for(line);
    if (tag == "set") return parse_set(line);
    if (tag == "macro") return parse_macro(line);
    if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) error(fmt::format("'{}' outside a for loop", tag));
      end_tag();
      return Node{tag == "break" ? Node::Kind::loop_break : Node::Kind::loop_continue, line};
    }
    if (tag == "filter") {
      Node filter{Node::Kind::filter_block, line};
      filter.expr = parse_filter_chain(nullptr);
      end_tag();
      filter.body = parse_block_until("endfilter", "filter");
      return filter;
    }
    if (tag == "generation") {
      end_tag();
      Node generation{Node::Kind::generation, line};
      generation.body = parse_block_until("endgeneration", "generation");
      return generation;
    }
    static const std::set<std::string> closing = {
        "elif", "else", "endif", "endfor", "endset", "endmacro", "endfilter", "endgeneration", "endraw"};
    if (closing.count(tag)) error(fmt::format("'{}' has no open block to belong to", tag));
    error(
        fmt::format("the tag '{}' is not supported in chat templates (if, for, set, macro, filter, "
                    "generation, break and continue are)",
                    tag));
  }

  Node parse_if(int line) {
    Node block{Node::Kind::if_block, line};
    ExprPtr condition = parse_expression(true);
    for (;;) {
      end_tag();
      auto [body, end] = parse_body({"elif", "else", "endif"});
      if (end.empty())
        fail("[chat_template] {} line {}: 'if' is never closed with {{% endif %}}", source_, line);
      block.branches.emplace_back(std::move(condition), std::move(body));
      if (end == "elif") {
        condition = parse_expression(true);
        continue;
      }
      if (end == "else") {
        end_tag();
        block.else_body = parse_block_until("endif", "if");
      } else {
        end_tag();
      }
      return block;
    }
  }

  // A name, or names separated by commas (unpacked), as for and set assign them.
  ExprPtr parse_assign_target(bool allow_attribute) {
    const int line = current().line;
    auto first = node(Expr::Kind::name, line);
    first->name = expect_name("a variable name");
    if (allow_attribute && at_op(".")) {
      take();
      auto attribute = node(Expr::Kind::attribute, line);
      attribute->name = expect_name("an attribute name after '.'");
      attribute->children.push_back(std::move(first));
      return attribute;
    }
    if (!at_op(",")) return first;
    auto names = node(Expr::Kind::tuple, line);
    names->children.push_back(std::move(first));
    while (at_op(",")) {
      take();
      auto next = node(Expr::Kind::name, current().line);
      next->name = expect_name("a variable name after ','");
      names->children.push_back(std::move(next));
    }
    return names;
  }

  Node parse_for(int line) {
    Node loop{Node::Kind::for_block, line};
    loop.target = parse_assign_target(false);
    if (!at_name("in")) error(fmt::format("expected 'in' in a for loop, found {}", describe(current())));
    take();
    loop.expr = parse_tuple(false);
    if (at_name("if")) {
      take();
      loop.condition = parse_expression(true);
    }
    if (at_name("recursive")) error("recursive for loops are not supported in chat templates");
    end_tag();
    ++loop_depth_;
    auto [body, end] = parse_body({"else", "endfor"});
    --loop_depth_;
    if (end.empty())
      fail("[chat_template] {} line {}: 'for' is never closed with {{% endfor %}}", source_, line);
    loop.body = std::move(body);
    end_tag();
    if (end == "else") loop.else_body = parse_block_until("endfor", "for");
    return loop;
  }

  Node parse_set(int line) {
    ExprPtr target = parse_assign_target(true);
    if (at_op("=")) {
      take();
      Node set{Node::Kind::set, line};
      set.target = std::move(target);
      set.expr = parse_tuple(true);
      end_tag();
      return set;
    }
    if (target->kind != Expr::Kind::name) error("a {% set %} block assigns one name");
    Node block{Node::Kind::set_block, line};
    block.target = std::move(target);
    if (at_op("|")) {
      take();
      block.expr = parse_filter_chain(nullptr);
    }
    end_tag();
    block.body = parse_block_until("endset", "set");
    return block;
  }

  Node parse_macro(int line) {
    Node macro{Node::Kind::macro, line};
    macro.text = expect_name("a macro name");
    expect_op("(");
    while (!at_op(")")) {
      if (!macro.parameters.empty()) expect_op(",");
      std::string name = expect_name("a parameter name");
      ExprPtr fallback;
      if (at_op("=")) {
        take();
        fallback = parse_expression(true);
      }
      macro.parameters.emplace_back(std::move(name), std::move(fallback));
    }
    take();
    end_tag();
    const int loops = std::exchange(loop_depth_, 0);
    macro.body = parse_block_until("endmacro", "macro");
    loop_depth_ = loops;
    return macro;
  }

  // ---- expressions ----

  // Expressions separated by commas make a tuple; `with_conditional` false leaves a trailing `if` to
  // the caller (a for loop's filter).
  ExprPtr parse_tuple(bool with_conditional) {
    const int line = current().line;
    ExprPtr first = parse_expression(with_conditional);
    if (!at_op(",")) return first;
    auto tuple = node(Expr::Kind::tuple, line);
    tuple->children.push_back(std::move(first));
    while (at_op(",")) {
      take();
      if (current().kind == TokenKind::variable_end || current().kind == TokenKind::block_end || at_op(")"))
        break;
      tuple->children.push_back(parse_expression(with_conditional));
    }
    return tuple;
  }

  ExprPtr parse_expression(bool with_conditional) {
    Nesting nesting(*this);
    ExprPtr expr = parse_or();
    while (with_conditional && at_name("if")) {
      auto conditional = node(Expr::Kind::conditional, take().line);
      conditional->children.push_back(std::move(expr));
      conditional->children.push_back(parse_or());
      if (at_name("else")) {
        take();
        conditional->children.push_back(parse_expression(true));
      } else {
        conditional->children.push_back(nullptr);
      }
      expr = std::move(conditional);
    }
    return expr;
  }

  ExprPtr parse_or() { return parse_logical("or", Expr::Kind::logical_or, &Parser::parse_and); }
  ExprPtr parse_and() { return parse_logical("and", Expr::Kind::logical_and, &Parser::parse_not); }

  ExprPtr parse_logical(const char* word, Expr::Kind kind, ExprPtr (Parser::*operand)()) {
    ExprPtr left = (this->*operand)();
    while (at_name(word)) {
      auto both = node(kind, take().line);
      both->children.push_back(std::move(left));
      both->children.push_back((this->*operand)());
      left = std::move(both);
    }
    return left;
  }

  ExprPtr parse_not() {
    if (!at_name("not")) return parse_compare();
    Nesting nesting(*this);
    auto negation = node(Expr::Kind::logical_not, take().line);
    negation->children.push_back(parse_not());
    return negation;
  }

  ExprPtr parse_compare() {
    const int line = current().line;
    ExprPtr first = parse_additive();
    ExprPtr compare;
    for (;;) {
      std::string op;
      if (current().kind == TokenKind::op &&
          (at_op("==") || at_op("!=") || at_op("<") || at_op("<=") || at_op(">") || at_op(">=")))
        op = take().text;
      else if (at_name("in"))
        op = take().text;
      else if (at_name("not") && peek().kind == TokenKind::name && peek().text == "in")
        op = (take(), take(), "not in");
      else
        break;
      if (!compare) {
        compare = node(Expr::Kind::compare, line);
        compare->children.push_back(std::move(first));
      }
      compare->ops.push_back(op);
      compare->children.push_back(parse_additive());
    }
    return compare ? std::move(compare) : std::move(first);
  }

  ExprPtr binary(std::string op, ExprPtr left, ExprPtr right, int line) {
    auto both = node(Expr::Kind::binary, line);
    both->name = std::move(op);
    both->children.push_back(std::move(left));
    both->children.push_back(std::move(right));
    return both;
  }

  ExprPtr parse_additive() {
    ExprPtr left = parse_concat();
    while (at_op("+") || at_op("-")) {
      const Token op = take();
      left = binary(op.text, std::move(left), parse_concat(), op.line);
    }
    return left;
  }

  ExprPtr parse_concat() {
    ExprPtr left = parse_multiplicative();
    while (at_op("~")) {
      const Token op = take();
      left = binary("~", std::move(left), parse_multiplicative(), op.line);
    }
    return left;
  }

  ExprPtr parse_multiplicative() {
    ExprPtr left = parse_power();
    while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
      const Token op = take();
      left = binary(op.text, std::move(left), parse_power(), op.line);
    }
    return left;
  }

  ExprPtr parse_power() {
    ExprPtr left = parse_unary(true);
    while (at_op("**")) {
      const Token op = take();
      left = binary("**", std::move(left), parse_unary(true), op.line);
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filters) {
    Nesting nesting(*this);
    ExprPtr expr;
    if (at_op("-")) {
      expr = node(Expr::Kind::negate, take().line);
      expr->children.push_back(parse_unary(false));
    } else if (at_op("+")) {
      take();
      expr = parse_unary(false);
    } else {
      expr = parse_postfix(parse_primary());
    }
    return with_filters ? parse_filters_and_tests(std::move(expr)) : std::move(expr);
  }

  ExprPtr parse_primary() {
    const Token& token = current();
    const int line = token.line;
    auto literal = [&](Value value) {
      auto expr = node(Expr::Kind::literal, line);
      expr->value = std::move(value);
      return expr;
    };
    switch (token.kind) {
      case TokenKind::name: {
        const std::string name = take().text;
        if (name == "true" || name == "True") return literal(true);
        if (name == "false" || name == "False") return literal(false);
        if (name == "none" || name == "None") return literal(None{});
        auto expr = node(Expr::Kind::name, line);
        expr->name = name;
        return expr;
      }
      case TokenKind::string: {
        std::string text = take().text;
        while (current().kind == TokenKind::string) text += take().text;  // 'a' 'b' is 'ab'
        return literal(std::move(text));
      }
      case TokenKind::integer: {
        const std::string digits = take().text;
        int64_t value = 0;
        const auto [end, status] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
        if (status != std::errc() || end != digits.data() + digits.size())
          error(fmt::format("the integer {} does not fit in 64 bits", digits));
        return literal(value);
      }
      case TokenKind::floating:  // as Python's float(): past the range, infinity or zero (stod would throw)
        return literal(std::strtod(take().text.c_str(), nullptr));
      case TokenKind::op:
        if (token.text == "(") {
          take();
          if (at_op(")")) {
            take();
            return node(Expr::Kind::tuple, line);
          }
          ExprPtr inner = parse_tuple(true);
          expect_op(")");
          return inner;
        }
        if (token.text == "[") {
          take();
          auto list = node(Expr::Kind::list, line);
          parse_items("]", [&] { list->children.push_back(parse_expression(true)); });
          return list;
        }
        if (token.text == "{") {
          take();
          auto dict = node(Expr::Kind::dict, line);
          parse_items("}", [&] {
            dict->children.push_back(parse_expression(true));
            expect_op(":");
            dict->children.push_back(parse_expression(true));
          });
          return dict;
        }
        break;
      default:
        break;
    }
    error(fmt::format("expected an expression, found {}", describe(token)));
  }

  ExprPtr parse_postfix(ExprPtr expr) {
    for (;;) {
      if (at_op(".")) {
        const int line = take().line;
        auto access = node(Expr::Kind::attribute, line);
        if (current().kind == TokenKind::integer) {  // x.0 is x[0]
          access->kind = Expr::Kind::item;
          access->children.push_back(std::move(expr));
          access->children.push_back(parse_primary());
        } else {
          access->name = expect_name("an attribute name after '.'");
          access->children.push_back(std::move(expr));
        }
        expr = std::move(access);
      } else if (at_op("[")) {
        expr = parse_subscript(std::move(expr));
      } else if (at_op("(")) {
        expr = parse_call(std::move(expr));
      } else {
        return expr;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr object) {
    const int line = take().line;
    ExprPtr parts[3];
    int part = 0;
    bool is_slice = false;
    while (!at_op("]")) {
      if (at_op(":")) {
        take();
        is_slice = true;
        if (++part > 2) error("a slice has at most three parts (start:stop:step)");
        continue;
      }
      if (parts[part])
        error(fmt::format("expected ':' or ']' in a subscript, found {}", describe(current())));
      parts[part] = parse_expression(true);
    }
    take();
    if (!is_slice) {
      if (!parts[0]) error("an empty subscript []");
      auto item = node(Expr::Kind::item, line);
      item->children.push_back(std::move(object));
      item->children.push_back(std::move(parts[0]));
      return item;
    }
    auto slice = node(Expr::Kind::slice, line);
    slice->children.push_back(std::move(object));
    for (auto& p : parts) slice->children.push_back(std::move(p));
    return slice;
  }

  // Arguments in parentheses: positional, then name=value.
  void parse_arguments(Expr& call) {
    expect_op("(");
    parse_items(")", [&] {
      if (at_op("*") || at_op("**")) error("*args and **kwargs are not supported in chat templates");
      if (current().kind == TokenKind::name && peek().kind == TokenKind::op && peek().text == "=") {
        std::string name = take().text;
        take();
        call.named.emplace_back(std::move(name), parse_expression(true));
      } else {
        if (!call.named.empty()) error("a positional argument after a keyword argument");
        call.children.push_back(parse_expression(true));
      }
    });
  }

  // Items separated by commas up to `close` (a trailing comma allowed), each read by `item`; consumes
  // the closing token.
  template <class Item>
  void parse_items(std::string_view close, Item item) {
    bool any = false;
    while (!at_op(close)) {
      if (std::exchange(any, true)) {
        expect_op(",");
        if (at_op(close)) break;
      }
      item();
    }
    take();
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto call = node(Expr::Kind::call, current().line);
    call->children.push_back(std::move(callee));
    parse_arguments(*call);
    return call;
  }

  // `| name(args)` repeated; `operand` null for a filter block's chain.
  ExprPtr parse_filter_chain(ExprPtr operand) {
    bool first = operand == nullptr;
    for (;;) {
      if (!first) {
        if (!at_op("|")) return operand;
        take();
      }
      first = false;
      auto filter = node(Expr::Kind::filter, current().line);
      filter->name = expect_name("a filter name");
      filter->children.push_back(std::move(operand));
      if (at_op("(")) parse_arguments(*filter);
      operand = std::move(filter);
    }
  }

  ExprPtr parse_filters_and_tests(ExprPtr expr) {
    for (;;) {
      if (at_op("|")) {
        expr = parse_filter_chain(std::move(expr));
      } else if (at_name("is")) {
        auto test = node(Expr::Kind::test, take().line);
        if (at_name("not")) {
          take();
          test->negated = true;
        }
        test->name = expect_name("a test name after 'is'");
        test->children.push_back(std::move(expr));
        const Token& next = current();
        const bool argument = next.kind == TokenKind::string || next.kind == TokenKind::integer ||
                              next.kind == TokenKind::floating || at_op("[") || at_op("{") ||
                              (next.kind == TokenKind::name && next.text != "else" && next.text != "or" &&
                               next.text != "and" && next.text != "if" && next.text != "is");
        if (at_op("("))
          parse_arguments(*test);
        else if (argument)
          test->children.push_back(parse_postfix(parse_primary()));
        expr = std::move(test);
      } else if (at_op("(")) {
        expr = parse_call(std::move(expr));
      } else {
        return expr;
      }
    }
  }

  std::vector<Token> tokens_;
  const std::string& source_;
  size_t pos_ = 0;
  int nesting_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Template parse_template(std::string_view template_source, const std::string& source) {
  Template parsed;
  parsed.source = source;
  parsed.body = Parser(lex_template(template_source, source), source).parse_all();
  return parsed;
}

}  // namespace dew::jinja
