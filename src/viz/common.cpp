// The parts of the pictures that do not depend on the medium: see common.hpp.
#include "viz/common.hpp"

#include <qkv/core/error.hpp>

#include <fmt/format.h>

#include "core/atomic_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <system_error>

namespace qkv::viz::detail {

Matrix read_matrix(const Tensor& m, const char* op) {
  if (!m.defined()) fail("{}: undefined tensor", op);
  if (m.dim() != 2) fail("{}: expected a 2-D tensor (rows, cols), got shape {}", op, m.shape());
  if (m.numel() == 0) fail("{}: empty tensor of shape {}", op, m.shape());
  return {m.size(0), m.size(1), m.to_vector()};
}

Kind kind_of(float v, float masked_below) {
  if (std::isnan(v)) return Kind::NaN;
  if (std::isinf(v)) return Kind::Inf;
  if (v <= masked_below) return Kind::Masked;
  return Kind::Value;
}

// --- the colour scale ---------------------------------------------------------

float Scale::t(float v) const {
  if (constant) return 0.5f;
  // in double: hi - lo may overflow a float (lo = -3e38, hi = 3e38)
  double t = (static_cast<double>(v) - lo) / (static_cast<double>(hi) - lo);
  return static_cast<float>(std::clamp(t, 0.0, 1.0));
}

Scale make_scale(const std::vector<float>& values, const HeatmapOptions& opt, const char* op) {
  Scale s;
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  bool any = false, whole = true;
  for (float v : values) {
    switch (kind_of(v, opt.masked_below)) {
      case Kind::Value:
        lo = std::min(lo, v);
        hi = std::max(hi, v);
        any = true;
        whole = whole && v == std::floor(v);
        break;
      case Kind::Masked:
        ++s.masked;
        break;
      case Kind::NaN:
      case Kind::Inf:
        ++s.nonfinite;
        break;
    }
  }
  const bool given_lo = !std::isnan(opt.vmin), given_hi = !std::isnan(opt.vmax);
  if ((given_lo && std::isinf(opt.vmin)) || (given_hi && std::isinf(opt.vmax)))
    fail("{}: colour limits must be finite, got vmin {} and vmax {}", op, opt.vmin, opt.vmax);
  if (given_lo) lo = opt.vmin;
  if (given_hi) hi = opt.vmax;
  if (given_lo && given_hi && !(lo < hi)) fail("{}: vmin {} must be below vmax {}", op, opt.vmin, opt.vmax);
  if (!any && !(given_lo && given_hi)) {  // every entry masked, NaN or Inf: nothing to scale by
    s.empty = true;
    return s;
  }
  if (lo > hi || (lo == hi && (given_lo || given_hi)))
    fail("{}: the colour range [{}, {}] is empty (vmin {}, vmax {}; entries from {} to {})", op, lo, hi, opt.vmin,
         opt.vmax, given_lo ? hi : lo, given_hi ? lo : hi);
  s.lo = lo;
  s.hi = hi;
  s.constant = lo == hi;
  s.whole = whole && !given_lo && !given_hi && !s.constant && hi - lo < WHOLE_LEVELS;
  return s;
}

// --- pooling ------------------------------------------------------------------

Pooled pool(const Matrix& m, int64_t max_rows, int64_t max_cols, float masked_below) {
  Pooled p;
  p.block_rows = m.rows > max_rows ? (m.rows + max_rows - 1) / max_rows : 1;
  p.block_cols = m.cols > max_cols ? (m.cols + max_cols - 1) / max_cols : 1;
  if (!p.pooled()) {
    p.m = m;
    return p;
  }
  const int64_t R = (m.rows + p.block_rows - 1) / p.block_rows, C = (m.cols + p.block_cols - 1) / p.block_cols;
  p.m = {R, C, std::vector<float>(static_cast<size_t>(R * C))};
  for (int64_t i = 0; i < R; ++i) {
    for (int64_t j = 0; j < C; ++j) {
      double sum = 0;
      int64_t count = 0;
      bool nan = false, inf = false;
      for (int64_t r = i * p.block_rows; r < std::min(m.rows, (i + 1) * p.block_rows); ++r) {
        for (int64_t c = j * p.block_cols; c < std::min(m.cols, (j + 1) * p.block_cols); ++c) {
          float v = m.at(r, c);
          Kind k = kind_of(v, masked_below);
          nan = nan || k == Kind::NaN;
          inf = inf || k == Kind::Inf;
          if (k == Kind::Value) {
            sum += v;
            ++count;
          }
        }
      }
      float mean = count > 0 ? static_cast<float>(sum / static_cast<double>(count)) : masked_below;
      if (inf) mean = std::numeric_limits<float>::infinity();
      if (nan) mean = std::numeric_limits<float>::quiet_NaN();
      p.m.values[static_cast<size_t>(i * C + j)] = mean;
    }
  }
  return p;
}

// --- notes --------------------------------------------------------------------

std::string pool_note(const Matrix& original, const Pooled& p) {
  return fmt::format("mean over {}x{} blocks: {} x {} -> {} x {}", p.block_rows, p.block_cols, original.rows,
                     original.cols, p.m.rows, p.m.cols);
}

std::string constant_note(float value) { return fmt::format("constant: every entry is {}", num(value)); }

std::string masked_note(int64_t count, float below) {
  return fmt::format("{} masked {} (<= {})", count, count == 1 ? "entry" : "entries", num(below));
}

std::string nonfinite_note(int64_t count) {
  return fmt::format("{} {} NaN/Inf", count, count == 1 ? "entry is" : "entries are");
}

// --- labels -------------------------------------------------------------------

void check_labels(const std::vector<std::string>& labels, int64_t n, const char* what, const char* op,
                  const Shape& shape) {
  if (!labels.empty() && static_cast<int64_t>(labels.size()) != n)
    fail("{}: {} {} for a tensor of shape {}, which needs {}", op, labels.size(), what, shape, n);
}

std::vector<std::string> axis_labels(const std::vector<std::string>& given, int64_t n, int64_t step) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < n; i += step)
    out.push_back(given.empty() ? fmt::format("{}", i) : given[static_cast<size_t>(i)]);
  return out;
}

std::string num(double v) {
  if (v == 0) return "0";  // not "-0"
  std::string s = fmt::format("{:.3g}", v);
  // 1e+05 -> 1e5, 2.5e-07 -> 2.5e-7
  size_t e = s.find('e');
  if (e == std::string::npos) return s;
  std::string mantissa = s.substr(0, e), exponent = s.substr(e + 1);
  bool negative = exponent[0] == '-';
  exponent = exponent.substr(1);
  exponent.erase(0, std::min(exponent.find_first_not_of('0'), exponent.size() - 1));
  return mantissa + "e" + (negative ? "-" : "") + exponent;
}

// --- line plots ---------------------------------------------------------------

std::vector<float> x_of(const Series& s) {
  if (!s.x.empty()) return s.x;
  std::vector<float> x(s.y.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  return x;
}

PlotRange plot_range(const std::vector<Series>& series, const char* op) {
  if (series.empty()) fail("{}: no series to plot", op);
  const double inf = std::numeric_limits<double>::infinity();
  PlotRange r{inf, -inf, inf, -inf};
  for (size_t k = 0; k < series.size(); ++k) {
    const Series& s = series[k];
    if (s.y.empty()) fail("{}: series {} ('{}') has no points", op, k, s.name);
    if (!s.x.empty() && s.x.size() != s.y.size())
      fail("{}: series {} ('{}') has {} x values and {} y values", op, k, s.name, s.x.size(), s.y.size());
    std::vector<float> x = x_of(s);
    for (size_t i = 0; i < x.size(); ++i) {
      if (!std::isfinite(x[i]) || !std::isfinite(s.y[i])) continue;
      r.xmin = std::min<double>(r.xmin, x[i]);
      r.xmax = std::max<double>(r.xmax, x[i]);
      r.ymin = std::min<double>(r.ymin, s.y[i]);
      r.ymax = std::max<double>(r.ymax, s.y[i]);
    }
  }
  if (r.xmin > r.xmax) fail("{}: no point has a finite x and y", op);
  auto widen = [](double& lo, double& hi) {
    if (lo < hi) return;
    double half = lo != 0 ? std::abs(lo) / 2 : 1;
    lo -= half;
    hi += half;
  };
  widen(r.xmin, r.xmax);
  widen(r.ymin, r.ymax);
  return r;
}

Rgb series_color(size_t i) {
  static const Rgb TAB10[] = {{31, 119, 180}, {255, 127, 14},  {44, 160, 44},   {214, 39, 40},  {148, 103, 189},
                              {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207}};
  return TAB10[i % 10];
}

// --- text ---------------------------------------------------------------------

std::vector<std::string> code_points(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    auto lead = static_cast<unsigned char>(s[i]);
    size_t n = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xe ? 3 : (lead >> 3) == 0x1e ? 4 : 1;
    n = std::min(n, s.size() - i);
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

int64_t text_width(const std::string& s) { return static_cast<int64_t>(code_points(s).size()); }

std::string truncate(const std::string& s, int64_t width) {
  std::vector<std::string> cps = code_points(s);
  if (static_cast<int64_t>(cps.size()) <= width) return s;
  std::string out;
  for (int64_t i = 0; i + 1 < width; ++i) out += cps[static_cast<size_t>(i)];
  return out + "…";
}

// --- files --------------------------------------------------------------------

void write_file(const std::filesystem::path& file, const std::string& contents, const char* op) {
  if (file.empty()) fail("{}: empty file name", op);
  std::error_code ec;
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), ec);
  if (ec)
    fail("{}: cannot create the folder {} for {}: {}", op, file.parent_path().string(), file.string(), ec.message());
  // Through a temporary renamed into place: a picture being redrawn (say,
  // every epoch) is never seen half-written, and a failed write leaves the
  // old one.
  core::detail::write_file_atomically(file, {contents}, fmt::format("{}: '{}'", op, file.string()));
}

}  // namespace qkv::viz::detail
