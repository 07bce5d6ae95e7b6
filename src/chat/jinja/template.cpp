// Template: parse + render entry points, the global functions templates call, and the conversion of
// internal JinjaError exceptions into tf::Error at the module boundary.
#include "chat/jinja/template.h"

#include <fmt/format.h>

#include "chat/jinja/methods.h"
#include "chat/jinja/parser.h"

namespace tf::chat::jinja {
namespace {

// kInvalidArgument: the template refused its input (raise_exception), in its own words, or the
// source does not parse; kResourceExhausted: a limit; kInternal: the template failed on a value.
Error to_error(const JinjaError& e, bool rendering) {
  if (dynamic_cast<const TemplateRaised*>(&e)) return Error{ErrorCode::kInvalidArgument, e.what()};
  std::string where = e.line > 0 ? fmt::format("template:{}:{}: ", e.line, e.col) : "template: ";
  ErrorCode code = dynamic_cast<const TemplateLimit*>(&e) ? ErrorCode::kResourceExhausted
                   : rendering                            ? ErrorCode::kInternal
                                                          : ErrorCode::kInvalidArgument;
  return Error{code, where + e.what()};
}

Value fn(const char* name, std::function<Value(CallArgs&)> f) {
  auto c = std::make_shared<Callable>();
  c->name = name;
  c->fn = std::move(f);
  return Value(std::move(c));
}

std::tm system_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  return tm;
}

std::shared_ptr<Frame> make_globals(Interp& in, const std::function<std::tm()>& clock) {
  auto g = std::make_shared<Frame>();
  g->set("range", fn("range", [&in](CallArgs& a) {
           auto num = [](const Value& v) {
             if (!v.is_int() && !v.is_bool()) throw JinjaError("range() integer argument expected");
             return v.as_int();
           };
           int64_t start = 0, stop, step = 1;
           if (a.args.size() == 1) {
             stop = num(a.args[0]);
           } else if (a.args.size() == 2 || a.args.size() == 3) {
             start = num(a.args[0]);
             stop = num(a.args[1]);
             if (a.args.size() == 3) step = num(a.args[2]);
           } else {
             throw JinjaError("range expected 1 to 3 arguments");
           }
           if (step == 0) throw JinjaError("range() arg 3 must not be zero");
           std::vector<Value> out;
           for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
             in.step();
             in.check_size(out.size() * 16);  // counts list memory against the same byte budget
             out.emplace_back(i);
             if (__builtin_add_overflow(i, step, &i)) break;
           }
           return Value::list(std::move(out));
         }));
  auto make_dict = [](CallArgs& a, bool ns) {
    Value d = Value::dict();
    d.as_dict().is_namespace = ns;
    for (const auto& v : a.args) {
      if (!v.is_dict())
        throw JinjaError("dict()/namespace() positional argument must be a mapping");
      for (const auto& [k, x] : v.as_dict().items) d.as_dict().set(k, x);
    }
    for (const auto& [k, v] : a.kwargs) d.as_dict().set(Value(k), v);
    return d;
  };
  g->set("namespace", fn("namespace", [make_dict](CallArgs& a) { return make_dict(a, true); }));
  g->set("dict", fn("dict", [make_dict](CallArgs& a) { return make_dict(a, false); }));
  g->set("raise_exception", fn("raise_exception", [](CallArgs& a) -> Value {
           throw TemplateRaised(a.args.empty() ? std::string("raise_exception called")
                                               : a.args[0].str());
         }));
  g->set("strftime_now", fn("strftime_now", [clock](CallArgs& a) {
           std::string f = a.args.empty() ? std::string("%Y-%m-%d") : a.args[0].str();
           if (f.size() > 256) throw JinjaError("strftime_now: format too long");
           std::tm tm = clock ? clock() : system_now();
           char buf[1024];
           size_t n = f.empty() ? 0 : std::strftime(buf, sizeof(buf), f.c_str(), &tm);
           return Value(std::string(buf, n));
         }));
  return g;
}

}  // namespace

Result<Template> Template::parse(std::string_view source, const LexOptions& options) {
  try {
    Template t;
    t.body_ = std::make_shared<const Body>(jinja::parse(lex(source, options)));
    return t;
  } catch (const JinjaError& e) {
    return to_error(e, false);
  } catch (const std::exception& e) {
    return make_error(ErrorCode::kInvalidArgument, "template: {}", e.what());
  }
}

Result<std::string> Template::render(const nlohmann::ordered_json& context,
                                     const RenderConfig& config) const {
  return render_impl(context, config);
}

Result<std::string> Template::render(const nlohmann::json& context,
                                     const RenderConfig& config) const {
  return render_impl(context, config);
}

template <typename Json>
Result<std::string> Template::render_impl(const Json& context, const RenderConfig& config) const {
  if (!body_) return make_error(ErrorCode::kInternal, "template: render before parse");
  if (!context.is_object() && !context.is_null()) {
    return make_error(ErrorCode::kInvalidArgument, "template: context must be a JSON object");
  }
  try {
    Interp in(config.limits, config.clock);
    auto globals = make_globals(in, config.clock);
    if (context.is_object()) {
      for (auto it = context.begin(); it != context.end(); ++it) {
        globals->set(it.key(), Value::from_json(it.value(), config.limits.max_value_depth));
      }
    }
    return in.render(*body_, std::move(globals));
  } catch (const JinjaError& e) {
    return to_error(e, true);
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::kResourceExhausted, "template: out of memory");
  } catch (const std::exception& e) {
    return make_error(ErrorCode::kInternal, "template: {}", e.what());
  }
}

}  // namespace tf::chat::jinja
