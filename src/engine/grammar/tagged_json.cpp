// The kTaggedJson front end: literal text, JSON values of given schemas and regex-matched text in
// sequence (forced tool calls); each schema compiles on its own and its rules are imported.
#include "base/json.h"
#include "engine/grammar/frontend.h"

namespace tf::grammar {
namespace {

// `e` with every rule reference moved by `offset` (the imported rules' new place).
ExprPtr moved(const ExprPtr& e, int offset) {
  switch (e->kind) {
    case Expr::Kind::kRef:
      return ref(e->rule + offset);
    case Expr::Kind::kSeq:
    case Expr::Kind::kAlt:
    case Expr::Kind::kRepeat: {
      auto copy = std::make_shared<Expr>(*e);
      for (ExprPtr& item : copy->items) item = moved(item, offset);
      return copy;
    }
    case Expr::Kind::kObject: {
      ObjectShape shape = *e->object;
      for (ObjectProperty& p : shape.properties) p.value = moved(p.value, offset);
      if (shape.extra_key) shape.extra_key = moved(shape.extra_key, offset);
      if (shape.extra_value) shape.extra_value = moved(shape.extra_value, offset);
      return object_expr(std::move(shape));
    }
    default:
      return e;
  }
}

// Appends `from`'s rules to `into`; returns where `from`'s root now is.
int import_rules(GrammarIr& into, const GrammarIr& from) {
  const int offset = static_cast<int>(into.rules.size());
  for (const Rule& r : from.rules) into.rules.push_back({r.name, moved(r.body, offset)});
  return from.root + offset;
}

}  // namespace

namespace {

Result<ExprPtr> segment_expr(const Segment& seg, GrammarIr& ir, const CompileLimits& limits) {
  switch (seg.kind) {
    case Segment::Kind::kText:
      return lit(seg.text);
    case Segment::Kind::kRegex:
      return regex_to_expr(seg.text, false, limits);
    case Segment::Kind::kJson:
      break;
  }
  auto schema = base::parse_json(seg.text);
  if (!schema.ok()) return schema.error().with_context("JSON Schema");
  TF_ASSIGN_OR_RETURN(GrammarIr sub, schema_to_ir(*schema, limits));
  if (static_cast<int>(ir.rules.size() + sub.rules.size()) > limits.max_rules) {
    return make_error(ErrorCode::kResourceExhausted, "the grammar needs more than {} rules",
                      limits.max_rules);
  }
  return ref(import_rules(ir, sub));
}

}  // namespace

Result<GrammarIr> tagged_json_to_ir(const GrammarSpec& spec, const CompileLimits& limits) {
  if (spec.items.empty()) return make_error(ErrorCode::kInvalidArgument, "no items to choose");
  if (spec.max_items < 1) return make_error(ErrorCode::kInvalidArgument, "max_items below 1");
  GrammarIr ir;
  std::vector<ExprPtr> alts;
  for (const TaggedItem& item : spec.items) {
    std::vector<ExprPtr> parts;
    for (const Segment& seg : item) {
      TF_ASSIGN_OR_RETURN(ExprPtr e, segment_expr(seg, ir, limits));
      parts.push_back(std::move(e));
    }
    alts.push_back(seq(std::move(parts)));
  }
  const int one = ir.add_rule("item", alt(std::move(alts)));
  std::vector<ExprPtr> body = {lit(spec.open), ref(one)};
  if (spec.max_items > 1) {
    body.push_back(repeat(seq({lit(spec.separator), ref(one)}), 0, spec.max_items - 1));
  }
  body.push_back(lit(spec.close));
  ir.root = ir.add_rule("root", seq(std::move(body)));
  return ir;
}

}  // namespace tf::grammar
