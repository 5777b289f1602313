// Uma resposta ERRADA do exercício 03 — Contar os pares de caracteres: conta o par (próximo, atual)
// em vez de (atual, próximo). O exercício tem de reprová-la (tests/cli/tutorials_test.cpp confere).
//
// O bigrama ótimo do capítulo 12 é feito de contagens: quantas vezes o caractere b vem logo
// depois do caractere a. Conte os pares dos primeiros 20000 caracteres de Dom Casmurro.
#include <algorithm>
#include <map>
#include <utility>

#include "data/text.hpp"
#include "exercicios/conferir.hpp"

using namespace glass;

using Par = std::pair<char32_t, char32_t>;

// contagem[{a, b}] = quantas vezes b vem logo depois de a em `texto`.
static std::map<Par, long> contar_pares(const std::u32string& texto) {
  std::map<Par, long> contagem;
  // --- a sua parte ---
  // o erro: o par ao contrário, (próximo, atual)
  for (std::size_t t = 0; t + 1 < texto.size(); ++t) contagem[{texto[t + 1], texto[t]}] += 1;
  // --- fim ---
  return contagem;
}

int main() {
  exercicio::titulo(3, "Contar os pares de caracteres");
  const std::u32string texto =
      load_text(GLASS_SOURCE_DIR "/data/corpora/domcasmurro.txt").substr(0, 20000);
  const std::map<Par, long> contagem = contar_pares(texto);

  std::vector<std::pair<long, Par>> ordem;
  for (const auto& [par, n] : contagem) ordem.push_back({n, par});
  std::sort(ordem.rbegin(), ordem.rend());
  std::printf("os 3 pares mais frequentes:\n");
  for (std::size_t i = 0; i < 3 && i < ordem.size(); ++i) {
    std::printf("  \"%s%s\" %ld vezes\n", char_to_utf8(ordem[i].second.first).c_str(),
                char_to_utf8(ordem[i].second.second).c_str(), ordem[i].first);
  }
  auto n_de = [&](char32_t a, char32_t b) {
    const auto it = contagem.find({a, b});
    return it == contagem.end() ? 0.0 : double(it->second);
  };
  // Referência: collections.Counter(zip(s, s[1:])) do Python nos mesmos 20000 caracteres:
  // 'e ' 563, 'a ' 542, 'o ' 498, e 'qu' 211 (todo 'q' do trecho vem antes de um 'u').
  const bool certo = exercicio::conferir(
      "resposta", {n_de(U'e', U' '), n_de(U'a', U' '), n_de(U'o', U' '), n_de(U'q', U'u')},
      {563, 542, 498, 211}, 0);
  return exercicio::resultado(certo);
}
