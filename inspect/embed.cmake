# Turns the web pages of web/ into one C++ header (run at build time by CMakeLists.txt):
#   cmake -DWEB_DIR=<web> -DOUTPUT=<generated header> -P embed.cmake
# In each page, <link rel="stylesheet" href="F"> becomes <style> with F's text and
# <script src="F"></script> becomes <script> with F's text, so the page needs no other file and no
# network; the program then only fills the page's JSON tags with data (web_page.hpp).

set(delimiter "GLASS_PAGE")

function(inline_page page out_var)
  file(READ "${WEB_DIR}/${page}" html)
  string(REGEX MATCHALL "<link rel=\"stylesheet\" href=\"[^\"]+\">" links "${html}")
  foreach(tag IN LISTS links)
    string(REGEX REPLACE ".*href=\"([^\"]+)\".*" "\\1" file "${tag}")
    file(READ "${WEB_DIR}/${file}" text)
    string(REPLACE "${tag}" "<style>\n${text}</style>" html "${html}")
  endforeach()
  string(REGEX MATCHALL "<script src=\"[^\"]+\"></script>" scripts "${html}")
  foreach(tag IN LISTS scripts)
    string(REGEX REPLACE ".*src=\"([^\"]+)\".*" "\\1" file "${tag}")
    file(READ "${WEB_DIR}/${file}" text)
    string(FIND "${text}" "</script" inner)
    if(NOT inner EQUAL -1)
      message(FATAL_ERROR "${file} contains '</script', which would end its <script> tag early")
    endif()
    string(REPLACE "${tag}" "<script>\n${text}</script>" html "${html}")
  endforeach()
  string(FIND "${html}" ")${delimiter}\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${page} contains ')${delimiter}\"', the end of the C++ raw string")
  endif()
  set(${out_var} "${html}" PARENT_SCOPE)
endfunction()

inline_page(index.html inspector)
inline_page(loss.html loss)
inline_page(live.html live)
inline_page(features.html features)
file(WRITE "${OUTPUT}.tmp"
  "// Generated at build time by inspect/embed.cmake from web/: edit those files.\n"
  "#pragma once\n\n"
  "namespace glass::web_pages {\n\n"
  "/// web/index.html with style.css, lab.css, common.js, loss_chart.js, lines.js, script.js,\n///   lab_views.js and lab_page.js inlined.\n"
  "inline constexpr const char kInspector[] = R\"${delimiter}(${inspector})${delimiter}\";\n\n"
  "/// web/loss.html with style.css and loss_chart.js inlined.\n"
  "inline constexpr const char kLoss[] = R\"${delimiter}(${loss})${delimiter}\";\n\n"
  "/// web/live.html (glass serve) with style.css, live.css, lab.css, common.js, loss_chart.js, lines.js,\n///   next_token.js, live.js, lab_views.js and lab.js inlined.\n"
  "inline constexpr const char kLive[] = R\"${delimiter}(${live})${delimiter}\";\n\n"
  "/// web/features.html (glass serve's SAE feature browser) with style.css, common.js and\n///   features.js inlined.\n"
  "inline constexpr const char kFeatures[] = R\"${delimiter}(${features})${delimiter}\";\n\n"
  "}  // namespace glass::web_pages\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
