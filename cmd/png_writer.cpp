// librsvg + cairo; see png_writer.h.
#include "cmd/png_writer.h"

#include <cairo.h>
#include <librsvg/rsvg.h>

#include <cmath>
#include <memory>

#include "engine/error.h"

namespace zinf::cli {

namespace {

struct GObjectUnref {
  void operator()(RsvgHandle* handle) const { g_object_unref(handle); }
};
struct SurfaceDestroy {
  void operator()(cairo_surface_t* surface) const { cairo_surface_destroy(surface); }
};
struct CairoDestroy {
  void operator()(cairo_t* cr) const { cairo_destroy(cr); }
};

// Takes the message out of a GError and frees it.
std::string Message(GError* error) {
  std::string message = error != nullptr ? error->message : "unknown error";
  if (error != nullptr) g_error_free(error);
  return message;
}

}  // namespace

void WriteSvgAsPng(const std::string& svg, const std::string& path, double scale) {
  GError* error = nullptr;
  std::unique_ptr<RsvgHandle, GObjectUnref> handle(
      rsvg_handle_new_from_data(reinterpret_cast<const guint8*>(svg.data()), svg.size(), &error));
  if (!handle) Fail("{}: cannot render the plot's SVG: {}", path, Message(error));
  double width = 0, height = 0;
  if (!rsvg_handle_get_intrinsic_size_in_pixels(handle.get(), &width, &height) || width <= 0 ||
      height <= 0) {
    Fail("{}: the plot's SVG has no width and height in pixels", path);
  }
  const int pixels_wide = static_cast<int>(std::ceil(width * scale));
  const int pixels_high = static_cast<int>(std::ceil(height * scale));
  // RGB without alpha: the plot is opaque (it paints a white background), so alpha is dead weight.
  std::unique_ptr<cairo_surface_t, SurfaceDestroy> surface(
      cairo_image_surface_create(CAIRO_FORMAT_RGB24, pixels_wide, pixels_high));
  std::unique_ptr<cairo_t, CairoDestroy> cr(cairo_create(surface.get()));
  cairo_set_source_rgb(cr.get(), 1, 1, 1);  // what an SVG without a background shows on
  cairo_paint(cr.get());
  if (cairo_status(cr.get()) != CAIRO_STATUS_SUCCESS) {
    Fail("{}: cannot make a {}×{} image: {}", path, pixels_wide, pixels_high,
         cairo_status_to_string(cairo_status(cr.get())));
  }
  cairo_scale(cr.get(), scale, scale);
  const RsvgRectangle viewport{0, 0, width, height};
  if (!rsvg_handle_render_document(handle.get(), cr.get(), &viewport, &error)) {
    Fail("{}: cannot render the plot's SVG: {}", path, Message(error));
  }
  const cairo_status_t status = cairo_surface_write_to_png(surface.get(), path.c_str());
  if (status != CAIRO_STATUS_SUCCESS) {
    Fail("cannot write {}: {}", path, cairo_status_to_string(status));
  }
}

}  // namespace zinf::cli

// LeakSanitizer (scripts/test --sanitize) reads this from any program that links the PNG writer.
// Fontconfig, which librsvg's text goes through, builds its font list once per process and keeps
// it to exit unless FcFini() is called, which it must not be while librsvg's font map (a global
// we do not own) still points into it. Its allocations are not ours to free; zinf's are still
// checked.
extern "C" const char* __lsan_default_suppressions() { return "leak:libfontconfig.so\n"; }
