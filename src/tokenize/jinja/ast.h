// The syntax tree of a chat template: expressions and statements, as the parser builds them and the
// renderer walks them. Plain data; no behaviour.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenize/jinja/value.h"

namespace dew::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;
using NamedExprs = std::vector<std::pair<std::string, ExprPtr>>;

struct Expr {
  enum class Kind {
    literal,      // value
    name,         // name
    attribute,    // children[0].name
    item,         // children[0][children[1]]
    slice,        // children[0][children[1]:children[2]:children[3]], absent parts null
    call,         // children[0](children[1..], named)
    filter,       // children[0] | name(children[1..], named); children[0] null in a filter block
    test,         // children[0] is [not] name(children[1..])
    logical_not,  // not children[0]
    negate,       // -children[0]
    binary,       // children[0] name children[1]: + - * / // % ** ~ in, "not in"
    compare,      // children[0] ops[0] children[1] ops[1] children[2] ...: Python's chained comparison
    logical_and,
    logical_or,
    conditional,  // children[0] if children[1] else children[2] (null: undefined)
    list,
    tuple,
    dict,  // children alternate key, value
  };
  Kind kind;
  int line;
  Value value;
  std::string name;
  std::vector<ExprPtr> children;
  std::vector<std::string> ops;
  NamedExprs named;
  bool negated = false;
};

struct Node;
using Body = std::vector<Node>;

struct Node {
  enum class Kind {
    text,          // text
    print,         // {{ expr }}
    if_block,      // branches; else_body
    for_block,     // for target in expr [if condition]: body; else_body when nothing was iterated
    set,           // set target = expr (target: a name, names, or name.attribute)
    set_block,     // {% set target %}body{% endset %}, optionally through expr (a filter chain)
    macro,         // name(parameters): body
    filter_block,  // {% filter expr %}body{% endfilter %}
    generation,    // {% generation %}body{% endgeneration %}: the assistant's text, recorded as a span
    loop_break,
    loop_continue,
  };
  Kind kind;
  int line;
  std::string text;
  ExprPtr target, expr, condition;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body, else_body;
  NamedExprs parameters;  // a macro's, defaults null where absent
};

struct Template {
  std::string source;  // names the template in errors
  Body body;
};

}  // namespace dew::jinja
