// The generic JSON rules (any value, object, array, string, number), shared by json_object and
// by untyped parts of JSON Schemas. Strings and numbers are rules of their own that call nothing,
// so their token tables come from the fast DFA walk.
#include "engine/grammar/frontend.h"

namespace tf::grammar {

namespace {

ExprPtr digits(int min) { return repeat(byte_range('0', '9'), min, -1); }

ExprPtr hex() {
  ByteSet s;
  s.add('0', '9');
  s.add('a', 'f');
  s.add('A', 'F');
  return byte_set(s);
}

// Four hex digits that are not a UTF-16 surrogate (D800-DFFF).
ExprPtr hex4_scalar() {
  ByteSet first;
  first.add('0', '9');
  first.add('a', 'c');
  first.add('A', 'C');
  first.add('e', 'f');
  first.add('E', 'F');
  ByteSet d;
  d.add('d', 'd');
  d.add('D', 'D');
  return alt({seq({byte_set(first), hex(), hex(), hex()}),
              seq({byte_set(d), byte_range('0', '7'), hex(), hex()})});
}

}  // namespace

ExprPtr JsonRules::string_char() {
  ByteSet esc;
  for (char c : std::string("\"\\/bfnrt")) esc.add(c, c);
  return alt({utf8_class({{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0x10FFFF}}),
              seq({lit("\\"), alt({byte_set(esc), seq({lit("u"), hex4_scalar()})})})});
}

int JsonRules::string() {
  if (string_ < 0)
    string_ = ir_.add_rule("string", seq({lit("\""), star(string_char()), lit("\"")}));
  return string_;
}

int JsonRules::integer() {
  if (integer_ < 0) {
    integer_ = ir_.add_rule(
        "integer", seq({opt(lit("-")), alt({lit("0"), seq({byte_range('1', '9'), digits(0)})})}));
  }
  return integer_;
}

int JsonRules::number() {
  if (number_ < 0) {
    ByteSet e, sign;
    e.add('e', 'e');
    e.add('E', 'E');
    sign.add('+', '+');
    sign.add('-', '-');
    number_ = ir_.add_rule(
        "number", seq({opt(lit("-")), alt({lit("0"), seq({byte_range('1', '9'), digits(0)})}),
                       opt(seq({lit("."), digits(1)})),
                       opt(seq({byte_set(e), opt(byte_set(sign)), digits(1)}))}));
  }
  return number_;
}

int JsonRules::object() {
  if (object_ < 0) {
    object_ = ir_.add_rule("object");
    ObjectShape shape;
    shape.extra_key = ref(string());
    shape.extra_value = ref(value());
    ir_.rules[object_].body = object_expr(std::move(shape));
  }
  return object_;
}

int JsonRules::array() {
  if (array_ < 0) {
    array_ = ir_.add_rule("array");
    ExprPtr sep = seq({lit(","), opt(lit(" "))});
    ExprPtr v = ref(value());
    ir_.rules[array_].body = seq({lit("["), opt(seq({v, star(seq({sep, v}))})), lit("]")});
  }
  return array_;
}

int JsonRules::value() {
  if (value_ < 0) {
    value_ = ir_.add_rule("value");
    ir_.rules[value_].body = alt({ref(object()), ref(array()), ref(string()), ref(number()),
                                  lit("true"), lit("false"), lit("null")});
  }
  return value_;
}

GrammarIr json_object_ir() {
  GrammarIr ir;
  JsonRules rules(ir);
  ir.root = rules.object();
  return ir;
}

Result<GrammarIr> choice_to_ir(const std::vector<std::string>& choices) {
  if (choices.empty()) return make_error(ErrorCode::kInvalidArgument, "choice list is empty");
  std::vector<ExprPtr> alts;
  for (const auto& c : choices) alts.push_back(lit(c));
  GrammarIr ir;
  ir.root = ir.add_rule("root", alt(std::move(alts)));
  return ir;
}

}  // namespace tf::grammar
