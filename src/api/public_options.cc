// sdx::SessionOptions (include/sdx/session_options.h) over runtime::SessionOptions and the option table
// (runtime/session_option_table.h, rows in runtime/session_options.inc).
#include "api/public_access.h"
#include "runtime/session_option_table.h"

namespace sdx {

namespace {

Status unknown_option(std::string_view name) {
  std::string names;
  for (const runtime::SessionOptionRow& r : runtime::session_option_rows())
    names += (names.empty() ? "" : ", ") + std::string(r.python);
  return not_found("unknown session option '" + std::string(name) + "'; the options are " + names);
}

}  // namespace

SessionOptions::SessionOptions() : impl_(std::make_unique<Impl>()) {}
SessionOptions::~SessionOptions() = default;
SessionOptions::SessionOptions(const SessionOptions& other) : impl_(std::make_unique<Impl>(*other.impl_)) {}
SessionOptions::SessionOptions(SessionOptions&& other) noexcept = default;
SessionOptions& SessionOptions::operator=(const SessionOptions& other) {
  if (this != &other) impl_ = std::make_unique<Impl>(*other.impl_);
  return *this;
}
SessionOptions& SessionOptions::operator=(SessionOptions&& other) noexcept = default;

Status SessionOptions::set(std::string_view name, OptionValue value) {
  const runtime::SessionOptionRow* row = runtime::find_session_option(name);
  if (!row) return unknown_option(name);
  const std::string source = "SessionOptions." + std::string(name) + "=" + runtime::format_session_option(*row, value);
  return runtime::set_session_option(&impl_->options, *row, std::move(value), source);
}

Result<OptionValue> SessionOptions::get(std::string_view name) const {
  const runtime::SessionOptionRow* row = runtime::find_session_option(name);
  if (!row) return unknown_option(name);
  return row->get(impl_->options);
}

std::vector<OptionInfo> SessionOptions::table() {
  std::vector<OptionInfo> out;
  for (const runtime::SessionOptionRow& r : runtime::session_option_rows()) {
    OptionInfo i;
    i.name = r.python;
    i.field = r.field;
    i.type = runtime::option_type_name(r.type);
    i.env = r.env;
    i.default_value = r.default_value;
    i.env_default = runtime::format_session_option(r, r.default_value);
    i.accepts = runtime::describe_session_option(r);
    i.c_field = r.c_field ? r.c_field : "";
    i.help = r.help;
    out.push_back(std::move(i));
  }
  return out;
}

std::vector<OptionSwitch> SessionOptions::switches() {
  std::vector<OptionSwitch> out;
  for (const runtime::SessionOptionSwitch& s : runtime::session_option_switches())
    out.push_back(OptionSwitch{s.env, s.field, s.help});
  return out;
}

}  // namespace sdx
