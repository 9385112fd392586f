// What the viewer's panels share: an OpenGL texture holding a SliceImage, and the layout record (each panel's and
// plot's rectangle in pixels) that --snapshot writes beside its picture. UI thread only.
#pragma once

#include <GLFW/glfw3.h>
#include <imgui.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "viewer/plot_widgets.hpp"
#include "viewer/slice_image.hpp"

namespace rtf::viewer {

struct Texture {
  GLuint id = 0;
  int width = 0, height = 0;
  double aspect = 1.0;
  Texture() = default;
  Texture(const Texture&) = delete;
  Texture& operator=(const Texture&) = delete;
  void upload(const SliceImage& img) {
    if (id == 0) glGenTextures(1, &id);
    glBindTexture(GL_TEXTURE_2D, id);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA, img.width, img.height, 0, GL_RGBA, GL_UNSIGNED_BYTE, img.rgba.data());
    width = img.width;
    height = img.height;
    aspect = img.pixel_aspect;
  }
  ImTextureID imgui_id() const {
    return reinterpret_cast<ImTextureID>(static_cast<intptr_t>(id));  // NOLINT(performance-no-int-to-ptr)
  }  // ImGui's OpenGL backend takes the texture name as its void* id
  ~Texture() {
    if (id != 0) glDeleteTextures(1, &id);
  }
};

struct Layout {
  std::vector<std::pair<std::string, PlotRect>> rects;
  void add(const std::string& name, PlotRect r) { rects.emplace_back(name, r); }
  void add_window(const std::string& name) {
    const ImVec2 p = ImGui::GetWindowPos(), s = ImGui::GetWindowSize();
    rects.emplace_back(name, PlotRect{p, ImVec2(p.x + s.x, p.y + s.y)});
  }
};

}  // namespace rtf::viewer
