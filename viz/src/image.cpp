// 8-bit RGB images and PNG files, through stb_image_write and stb_image.
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_IMPLEMENTATION
#include <stb_image.h>
#include <stb_image_write.h>

#include <memory>

#include "attograd/viz.h"

namespace ag::viz {

Rgb Image::at(int x, int y) const {
  AG_CHECK(x >= 0 && y >= 0 && x < width && y < height, "Image::at",
           "pixel (" + std::to_string(x) + ", " + std::to_string(y) + ") is outside the " +
               std::to_string(width) + "x" + std::to_string(height) + " image");
  // An Image is a plain struct: its fields may disagree (rgb resized by hand).
  AG_CHECK(rgb.size() == static_cast<size_t>(width) * static_cast<size_t>(height) * 3, "Image::at",
           "the image is " + std::to_string(width) + "x" + std::to_string(height) + " with " +
               std::to_string(rgb.size()) + " bytes; expected 3 a pixel");
  const size_t k =
      (static_cast<size_t>(y) * static_cast<size_t>(width) + static_cast<size_t>(x)) * 3;
  return {rgb[k], rgb[k + 1], rgb[k + 2]};
}

void write_png(const std::string& path, const Image& image) {
  AG_CHECK(image.width > 0 && image.height > 0 &&
               image.rgb.size() == static_cast<size_t>(image.width) * image.height * 3,
           "write_png",
           "the image is " + std::to_string(image.width) + "x" + std::to_string(image.height) +
               " with " + std::to_string(image.rgb.size()) + " bytes; expected 3 a pixel");
  const int ok =
      stbi_write_png(path.c_str(), image.width, image.height, 3, image.rgb.data(), image.width * 3);
  AG_CHECK(ok != 0, "write_png", "cannot write '" + path + "'");
}

Image read_png(const std::string& path) {
  int width = 0, height = 0, channels = 0;
  std::unique_ptr<stbi_uc, void (*)(void*)> pixels(
      stbi_load(path.c_str(), &width, &height, &channels, 3), stbi_image_free);
  AG_CHECK(pixels != nullptr, "read_png",
           "cannot read '" + path + "': " + (stbi_failure_reason() ? stbi_failure_reason() : "?"));
  Image image{width, height, {}};
  image.rgb.assign(pixels.get(), pixels.get() + static_cast<size_t>(width) * height * 3);
  return image;
}

}  // namespace ag::viz
