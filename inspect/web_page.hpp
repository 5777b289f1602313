#pragma once
// The web pages of web/ (index.html: the inspector; loss.html: the loss chart;
// live.html: the page of `glass serve`),
// embedded into the program at build time with their stylesheet and scripts inlined
// (inspect/embed.cmake). The program only puts data into them: JSON in their
// <script type="application/json" id="..."> tags.

#include <string>

namespace glass {

/// The inspector page, with the JSON tags "glass-inspection" and "glass-view" still empty.
const char* inspector_page();

/// The loss chart page, with the JSON tag "glass-loss" still empty.
const char* loss_page();

/// The live page of `glass serve` (web/live.html): it needs no data inside, it asks the
/// server's JSON API (serve/server.hpp).
const char* live_page();

/// The SAE feature browser of `glass serve` (web/features.html): it asks /api/features*.
const char* features_page();

/// `page` with the empty JSON tag `<script type="application/json" id="ID">{}</script>` filled
/// with `json` ('<', '>' and '&' escaped as \u003c, \u003e, \u0026, which mean the same inside
/// JSON strings, so the data cannot end the tag). Throws std::logic_error when the page has no
/// such tag.
std::string with_json(std::string page, const std::string& id, const std::string& json);

}  // namespace glass
