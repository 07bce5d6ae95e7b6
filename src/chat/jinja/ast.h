// Syntax tree of a parsed template: expressions and statements, each carrying its line and column
// so runtime errors can name where they happened.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja/value.h"

namespace tf::chat::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Arguments {
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

// One node type with a kind tag keeps the tree-walker a single switch; fields used per kind:
//   kLiteral: value            kName: name             kList/kTuple: items   kDict: items (k,v,...)
//   kAttr: a.name               kItem: a[b]             kSlice: a[b:c:d] (null = omitted)
//   kCall: a(call)              kFilter: a|name(call)  (a null inside a filter block)
//   kTest: a is [not] name(call), negated               kUnary: op a
//   kBinary: a op b             kCompare: a (ops[i] items[i])...      kCond: b if a else c
struct Expr {
  enum class Kind {
    kLiteral,
    kName,
    kList,
    kTuple,
    kDict,
    kAttr,
    kItem,
    kSlice,
    kCall,
    kFilter,
    kTest,
    kUnary,
    kBinary,
    kCompare,
    kCond
  };
  Kind kind;
  int line = 0;
  int col = 0;
  Value value;
  std::string name;  // name, attribute, filter/test name, or operator
  ExprPtr a, b, c, d;
  std::vector<ExprPtr> items;
  std::vector<std::string> ops;
  Arguments call;
  bool negated = false;
  // Levels of expressions from here down; the parser refuses trees taller than its nesting limit,
  // which bounds the interpreter's recursion over them.
  int height = 1;
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null when required
};

// Statement kinds and their fields:
//   kText: text                 kOutput: expr
//   kIf: branches (cond, body), else_body
//   kFor: targets, expr (iterable), cond (filter), body, else_body
//   kSet: targets (or target_obj.attr when attr non-empty), expr; block form: body + filters
//   kMacro: name, params, body   kCallBlock: expr (the call), params (caller's), body
//   kFilterBlock: filters, body  kWith: targets/values (assignments), body
//   kBreak, kContinue            kScope: body (e.g. {% generation %})
struct Stmt {
  enum class Kind {
    kText,
    kOutput,
    kIf,
    kFor,
    kSet,
    kMacro,
    kCallBlock,
    kFilterBlock,
    kWith,
    kBreak,
    kContinue,
    kScope
  };
  Kind kind;
  int line = 0;
  int col = 0;
  std::string text;
  std::string name;
  std::string attr;
  ExprPtr expr;
  ExprPtr cond;
  std::vector<std::string> targets;
  std::vector<ExprPtr> values;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body else_body;
  std::vector<MacroParam> params;
  std::vector<ExprPtr> filters;  // kFilter expressions with a null input
};

}  // namespace tf::chat::jinja
